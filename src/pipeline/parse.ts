/**
 * Text → validated pipeline, in three phases: YAML (with positions), the zod
 * schema, then the named rules. Every problem is reported at once, each with
 * its line, column and path. Pure: reading the file is load.ts's job.
 */
import { LineCounter, parseDocument, visit, type Document, type Node } from 'yaml';
import type { z } from 'zod';
import { didYouMean } from '../common/did-you-mean.js';
import { PipelineError, type PipelineIssue } from '../common/errors.js';
import { formatPath, positionOf, type DocPath } from './positions.js';
import { checkRules } from './rules.js';
import { salvagePipeline } from './salvage.js';
import { KNOWN_KEYS, pipelineSchema, type PipelineFile } from './schema.js';

export function parsePipeline(text: string, file: string): PipelineFile {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });

  if (doc.errors.length > 0) {
    throw new PipelineError(
      file,
      doc.errors.map((e) => {
        const pos = lines.linePos(e.pos[0]);
        return { path: '', message: `YAML: ${firstLine(e.message)}`, line: pos.line, col: pos.col };
      }),
    );
  }

  const at = (path: DocPath, message: string, atKey = false): PipelineIssue => {
    const pos = positionOf(doc, lines, path, atKey);
    return { path: formatPath(path), message, ...(pos ? { line: pos.line, col: pos.col } : {}) };
  };

  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // The yaml library refuses a document whose aliases expand past a bound (a "billion laughs" file).
    const alias = firstAlias(doc);
    const pos = alias?.range ? lines.linePos(alias.range[0]) : undefined;
    throw new PipelineError(file, [
      {
        path: '',
        message: `YAML: ${firstLine(err instanceof Error ? err.message : String(err))}: the file's aliases (*name) expand too far; write the values out`,
        ...(pos ? { line: pos.line, col: pos.col } : {}),
      },
    ]);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new PipelineError(file, [{ path: '', message: 'expected a mapping with version, name and steps', line: 1, col: 1 }]);
  }

  const parsed = pipelineSchema.safeParse(data, { reportInput: true });
  const schemaIssues = parsed.success ? [] : parsed.error.issues.flatMap((i) => schemaIssue(i, at));
  // Values the schema refused (an unknown key refuses no value): a rule about the part that held one is left out.
  const refused = parsed.success ? [] : parsed.error.issues.filter((i) => i.code !== 'unrecognized_keys').map((i) => formatPath(i.path.filter((s): s is string | number => typeof s !== 'symbol')));
  // The rules run on what has its shape, so every problem shows at once; one about a part the
  // schema already refused (a step with "nothing to run" whose run: is not a string) is left out.
  let ruleIssues: PipelineIssue[] = [];
  try {
    const checked = parsed.success ? parsed.data : salvagePipeline(data as Record<string, unknown>);
    ruleIssues = checkRules(checked)
      .map((r) => at(r.path, r.message, r.atKey))
      .filter((r) => !refused.some((p) => p === r.path || p.startsWith(`${r.path}.`) || p.startsWith(`${r.path}[`)));
  } catch {
    // a shape the rules cannot read: the schema's problems say enough
  }
  const issues = [...schemaIssues, ...ruleIssues];
  if (issues.length > 0 || !parsed.success) throw new PipelineError(file, sortIssues(issues));
  return parsed.data;
}

type At = (path: DocPath, message: string, atKey?: boolean) => PipelineIssue;

function schemaIssue(issue: z.core.$ZodIssue, at: At): PipelineIssue[] {
  const path = issue.path.filter((s): s is string | number => typeof s !== 'symbol');
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeysAt(path);
    return issue.keys.map((key) => at([...path, key], `unknown key "${key}"${didYouMean(key, known) || flowHint(key)}`, true));
  }
  if (issue.input === undefined && path.length > 0) {
    const key = path[path.length - 1];
    return [at(path.slice(0, -1), `missing required key "${String(key)}"`)];
  }
  return [at(path, issue.message)];
}

/** Keys other tools use to jump or loop: how this format does it. */
const FLOW_KEYS = new Map([
  ['depends_on', 'needs: [step, …]'],
  ['after', 'needs: [step, …]'],
  ['retry', 'retries: { max: 2, backoff: 30s }'],
  ['on_failure', 'retries: { max: N } (run again), or continue_on_error: true (go on)'],
  ['goto', 'route: { output: verdict, to: { VALUE: step } } (back to an earlier step, bounded by its max_visits)'],
  ['next', 'route: { output: verdict, to: { VALUE: step } } (back to an earlier step, bounded by its max_visits)'],
  ['on_success', 'route: { output: verdict, to: { VALUE: step } } (back to an earlier step, bounded by its max_visits)'],
  ['loop', 'route: back to an earlier step, bounded by its max_visits'],
  ['repeat', 'route: back to an earlier step, bounded by its max_visits'],
  ['until', 'route: back to an earlier step, bounded by its max_visits'],
  ['while', 'route: back to an earlier step, bounded by its max_visits'],
  ['matrix', 'for_each: ${{ steps.<id>.outputs.<list> }}'],
  ['foreach', 'for_each: ${{ steps.<id>.outputs.<list> }}'],
  ['parallel', 'needs: (steps whose needs are met run at once)'],
  ['if', 'route: or continue_on_error: (this format has no conditions)'],
  ['when', 'route: or continue_on_error: (this format has no conditions)'],
]);

function flowHint(key: string): string {
  const instead = FLOW_KEYS.get(key);
  return instead ? `: this format says it with ${instead} (docs/pipeline-format.md, "Flow")` : '';
}

function knownKeysAt(path: DocPath): readonly string[] {
  const [a, b, c, d] = path;
  if (path.length === 0) return KNOWN_KEYS.root;
  if (a === 'credentials') return c === 'basic' ? KNOWN_KEYS.basic : KNOWN_KEYS.credential;
  // an egress entry with rules: defaults.egress[i], agents.X.egress[i], steps[i].egress[j]
  if ((a === 'defaults' && b === 'egress') || ((a === 'agents' || a === 'steps') && c === 'egress')) return KNOWN_KEYS.egressRule;
  if (a === 'project') return KNOWN_KEYS.project;
  if (a === 'hooks') return KNOWN_KEYS.hooks;
  if (a === 'delivery') return KNOWN_KEYS.delivery;
  if (a === 'notify') return KNOWN_KEYS.notify;
  if (a === 'schedule') return KNOWN_KEYS.schedule;
  if (a === 'inputs') return KNOWN_KEYS.input;
  if (a === 'defaults') return path.length === 1 ? KNOWN_KEYS.defaults : KNOWN_KEYS.resources;
  if (a === 'steps') return c === 'resources' ? KNOWN_KEYS.resources : c === 'route' ? KNOWN_KEYS.route : c === 'retries' ? KNOWN_KEYS.retries : c === 'approval' ? KNOWN_KEYS.approval : KNOWN_KEYS.step;
  if (a === 'agents') return d === 'resources' ? KNOWN_KEYS.resources : KNOWN_KEYS.agent;
  return [];
}

function sortIssues(issues: PipelineIssue[]): PipelineIssue[] {
  return issues.sort((x, y) => (x.line ?? 0) - (y.line ?? 0) || (x.col ?? 0) - (y.col ?? 0));
}

function firstAlias(doc: Document): Node | undefined {
  let found: Node | undefined;
  visit(doc, {
    Alias(_key, node) {
      found = node;
      return visit.BREAK;
    },
  });
  return found;
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? s;
}
