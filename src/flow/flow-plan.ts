/** A validated pipeline file → the planner's view of it: needs, lanes, bounds, routes, for_each sources. Pure. */
import type { PipelineFile } from '../pipeline/schema.js';
import { findExpressions } from '../pipeline/template.js';
import { flowShape, routeBody } from './graph.js';
import { DEFAULT_MAX_ITEMS, parseItems } from './items.js';
import { DEFAULT_BACKOFF_MS, DEFAULT_MAX_VISITS, ownValue, type FlowPlan, type FlowStep } from './planner.js';

export function flowPlan(p: PipelineFile, cores: number): FlowPlan {
  const shape = flowShape(p.steps);
  const steps = p.steps.map((s, i): FlowStep => {
    const step: FlowStep = {
      id: s.id,
      needs: shape.needs[i]!,
      lane: shape.lanes[i]!,
      maxVisits: s.max_visits ?? DEFAULT_MAX_VISITS,
      retries: { max: s.retries?.max ?? 0, backoffMs: s.retries?.backoff ?? DEFAULT_BACKOFF_MS },
      continueOnError: s.continue_on_error ?? false,
      outputs: s.outputs ?? [],
    };
    if (s.route) {
      const to = Object.fromEntries(Object.entries(s.route.to).map(([v, id]) => [v, shape.ids.indexOf(id)]));
      step.route = { output: s.route.output, to, loops: Object.fromEntries(Object.values(to).map((t) => [t, routeBody(shape, i, t)])) };
    }
    if (s.for_each !== undefined) {
      const expr = findExpressions(s.for_each)[0]?.expr;
      const from = expr?.kind === 'input' ? { input: expr.name } : expr?.kind === 'output' ? { step: expr.step, key: expr.key } : undefined;
      if (!from) throw new Error(`for_each of step ${s.id} is not an expression the runner can read`);
      step.forEach = { from, maxParallel: s.max_parallel ?? Infinity, maxItems: s.max_items ?? DEFAULT_MAX_ITEMS };
    }
    return step;
  });
  return { steps, maxParallel: p.max_parallel ?? Math.max(1, cores) };
}

/** for_each lists that come from the run's inputs, checked before the run starts: what is wrong with the first bad one. */
export function inputListProblem(plan: FlowPlan, inputs: Readonly<Record<string, string>>): string | undefined {
  for (const s of plan.steps) {
    const from = s.forEach?.from;
    if (!from || !('input' in from)) continue;
    const parsed = parseItems(ownValue(inputs, from.input), s.forEach!.maxItems);
    if ('problem' in parsed) return `input ${from.input} is the for_each list of step ${s.id}, and ${parsed.problem}`;
  }
  return undefined;
}
