/**
 * The flow rules of a pipeline file: needs name earlier steps (so there is no
 * cycle), routes go back to a step the router needs and nothing hangs off the
 * loop they make, for_each takes a list an earlier step makes, and a
 * persistent directory is shared by parallel steps only when the file says so.
 * Each problem says what the runner would do wrong and how to write it. Pure.
 */
import { didYouMean } from '../common/did-you-mean.js';
import type { DocPath } from '../pipeline/positions.js';
import type { PipelineFile } from '../pipeline/schema.js';
import { findExpressions, isWholeExpression } from '../pipeline/template.js';
import { descendants, flowShape, mayRunTogether, routeBody, type FlowShape } from './graph.js';

export interface FlowIssue {
  path: DocPath;
  message: string;
  atKey?: boolean;
}

export function checkFlow(p: PipelineFile): FlowIssue[] {
  const issues: FlowIssue[] = [];
  const ids = p.steps.map((s) => s.id);
  const shape = flowShape(p.steps);

  p.steps.forEach((step, i) => {
    step.needs?.forEach((need, j) => {
      const at: DocPath = ['steps', i, 'needs', j];
      const k = ids.indexOf(need);
      if (k < 0) issues.push({ path: at, message: `needs names step "${need}", which does not exist${didYouMean(need, ids)}` });
      else if (k === i) issues.push({ path: at, message: `step "${step.id}" cannot need itself` });
      else if (k > i) {
        const cycle = needsTransitively(p, k, step.id);
        const implicit = cycle?.slice(0, -1).filter((id) => p.steps.find((s) => s.id === id)?.needs === undefined) ?? [];
        issues.push({
          path: at,
          message: cycle
            ? `needs makes a cycle: "${step.id}" needs "${need}", which needs "${step.id}"${cycle.length > 2 ? ` (through ${cycle.slice(1, -1).join(', ')})` : ''}` +
              `${implicit.length ? ` (${implicit.map((id) => `"${id}"`).join(', ')} has no needs:, so it needs the step before it)` : ''}; a step can only need steps above it in the file`
            : `needs names step "${need}", which comes later in the file: list the steps so that each comes after what it needs (move "${need}" above "${step.id}")`,
        });
      }
    });

    if (step.route) checkRoute(p, shape, i, issues);
    if (step.max_visits !== undefined && !p.steps.some((s) => s.route && Object.values(s.route.to).includes(step.id))) {
      issues.push({
        path: ['steps', i, 'max_visits'],
        atKey: true,
        message: `max_visits bounds how often a route brings the run back to step "${step.id}", and no route: sends it here (a step that runs again in a loop counts the visits of the loop's target)`,
      });
    }

    if (step.for_each === undefined) {
      if (step.max_parallel !== undefined) issues.push({ path: ['steps', i, 'max_parallel'], atKey: true, message: 'max_parallel on a step bounds its for_each instances: this step has no for_each (the whole run\'s bound is the top-level max_parallel:)' });
      if (step.max_items !== undefined) issues.push({ path: ['steps', i, 'max_items'], atKey: true, message: 'max_items bounds a for_each list: this step has no for_each' });
    } else {
      checkForEach(p, i, issues);
    }
  });

  if (p.project.workspace === 'persistent_directory' && !p.shared_workspace) {
    const together = concurrentSteps(p, shape);
    if (together) {
      issues.push({
        path: together.path,
        message:
          `${together.what} would run at once in the one persistent directory, where each would see the other's half-done files: ` +
          `set shared_workspace: true at the top level if they may, or order them with needs: (or max_parallel: 1)`,
      });
    }
  }
  return issues;
}

function checkRoute(p: PipelineFile, shape: FlowShape, i: number, issues: FlowIssue[]): void {
  const step = p.steps[i]!;
  const route = step.route!;
  const ids = shape.ids;
  if (step.for_each !== undefined) {
    issues.push({ path: ['steps', i, 'route'], atKey: true, message: `a for_each step cannot route: its instances would each pick a way; route from a step that needs "${step.id}" and reads its outputs` });
    return;
  }
  const outputs = step.outputs ?? [];
  const fromAgent = route.output === 'result' && step.agent !== undefined && p.agents?.[step.agent]?.use !== undefined;
  if (!outputs.includes(route.output) && !fromAgent) {
    issues.push({ path: ['steps', i, 'route', 'output'], message: `route reads output "${route.output}", which step "${step.id}" does not declare${didYouMean(route.output, outputs)} (add it to its outputs: list)` });
  }
  for (const [value, target] of Object.entries(route.to)) {
    const at: DocPath = ['steps', i, 'route', 'to', value];
    const t = ids.indexOf(target);
    if (t < 0) {
      issues.push({ path: at, message: `route sends ${JSON.stringify(value)} to step "${target}", which does not exist${didYouMean(target, ids)}` });
      continue;
    }
    if (t > i) {
      issues.push({ path: at, message: `route sends ${JSON.stringify(value)} to step "${target}", which comes later: a route goes back (to "${step.id}" itself or a step it needs); to go on, let the value fall through to the next step` });
      continue;
    }
    if (t !== i && !shape.ancestors[i]!.has(t)) {
      issues.push({
        path: at,
        message: `route sends ${JSON.stringify(value)} back to step "${target}", which "${step.id}" does not need: a route goes back to a step the router needs (directly or through others), so that what it reviews is made again; add "${target}" to the needs of "${step.id}" or of a step it needs`,
      });
      continue;
    }
    const body = new Set(routeBody(shape, i, t));
    const apart = descendants(shape, t).find((d) => !body.has(d) && !shape.ancestors[d]!.has(i));
    if (apart !== undefined) {
      issues.push({
        path: at,
        message:
          `route from "${step.id}" back to "${target}": step "${ids[apart]}" needs "${target}" but not "${step.id}", so it would run on work the route then makes again. ` +
          `Steps that need a route's target must be in the loop (needed by "${step.id}") or after it (need "${step.id}"): add "${step.id}" to the needs of "${ids[apart]}"`,
      });
    }
  }
}

function checkForEach(p: PipelineFile, i: number, issues: FlowIssue[]): void {
  const step = p.steps[i]!;
  const at: DocPath = ['steps', i, 'for_each'];
  const value = step.for_each!;
  const found = findExpressions(value);
  if (!isWholeExpression(value) || !found[0]?.expr || (found[0].expr.kind !== 'output' && found[0].expr.kind !== 'input')) {
    issues.push({ path: at, message: 'for_each takes one expression whose value is a JSON list of strings, like ${{ steps.plan.outputs.tasks }} or ${{ inputs.files }}' });
    return;
  }
  // Whether the step exists, runs before and declares the output: the expression rules (rules.ts), as for every expression.
}

/** Two steps (or a for_each step's instances) that could run at the same time, when the run's bound lets more than one run. */
function concurrentSteps(p: PipelineFile, shape: FlowShape): { path: DocPath; what: string } | undefined {
  if (p.max_parallel === 1) return undefined;
  for (let a = 0; a < shape.ids.length; a++) {
    const step = p.steps[a]!;
    if (step.for_each !== undefined && step.max_parallel !== 1) return { path: ['steps', a, 'for_each'], what: `the instances of step "${step.id}" (for_each)` };
    for (let b = a + 1; b < shape.ids.length; b++) {
      if (mayRunTogether(shape, a, b)) return { path: ['steps', b], what: `steps "${shape.ids[a]}" and "${shape.ids[b]}" (neither needs the other)` };
    }
  }
  return undefined;
}

/** The chain by which step `from` needs step `id` (ids, from → … → id), if it does. */
function needsTransitively(p: PipelineFile, from: number, id: string, seen = new Set<number>()): string[] | undefined {
  const step = p.steps[from]!;
  if (seen.has(from)) return undefined;
  seen.add(from);
  const direct = step.needs ?? (from > 0 ? [p.steps[from - 1]!.id] : []);
  for (const n of direct) {
    if (n === id) return [step.id, id];
    const k = p.steps.findIndex((s) => s.id === n);
    if (k < 0) continue;
    const rest = needsTransitively(p, k, id, seen);
    if (rest) return [step.id, ...rest];
  }
  return undefined;
}
