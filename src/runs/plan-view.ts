/**
 * A run's plan: every step of its pipeline in the file's order, each with
 * where it stands now (pending, running, waiting at its gate, how its last
 * run ended, or not run once the run ended without it) and its runs on record
 * by name (`implement`, `implement#2`, `build[0]`). So a reader sees from the
 * start what a run will do, not only what it did: the run page's steps table,
 * GET /api/runs/:id, and any door that shows a run.
 *
 * The steps come from the copy of its pipeline file the run keeps in its
 * directory (record.pipelineCopy), else (older runs) from the file it
 * recorded (record.pipelineFile). When that file is gone, unreadable, changed since the run started, or no
 * longer holds a step the run ran, the plan is the steps on record instead,
 * and says why: a plan read from a file the run did not run with would show
 * steps it never had.
 *
 * planSteps and planStates are pure; planOf reads the file (cached by its
 * size and modification time, so a page polling every two seconds parses it once).
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../common/errors.js';
import { loadPipeline } from '../pipeline/load.js';
import type { StepFile } from '../pipeline/schema.js';
import type { RunRecord } from '../run/record.js';
import { resultName, type StepStatus } from '../run/step-result.js';

export type PlanKind = 'run' | 'agent' | 'approval';

/** pending: not started yet; not_run: the run ended without it; a gate's decision; else how its last run ended */
export type PlanState = 'pending' | 'running' | 'awaiting_approval' | 'approved' | 'rejected' | 'not_run' | StepStatus;

/** A step as the file declares it: what a reader needs to know before it runs. */
export interface PlanStepSpec {
  id: string;
  kind: PlanKind;
  /** the file's own name for it (`name:`) */
  title?: string;
  /** an agent step's profile */
  agent?: string;
  /** the steps it waits for, when the file says (else the one before it) */
  needs?: string[];
  /** a for_each step: the expression its list comes from (one run per item) */
  forEach?: string;
  /** a step whose output may send the run back: the output and the steps it may go to */
  route?: { output: string; to: string[] };
  /** a step merge and apply require to have passed */
  verify?: true;
  /** an approval step: what the person deciding is asked, and how long the gate waits */
  approval?: { prompt: string; timeout?: string };
}

export interface PlanStep extends PlanStepSpec {
  state: PlanState;
  /** its runs on record, in order, the running ones included */
  runs: string[];
}

export interface RunPlan {
  /** pipeline_copy: the file as the run first read it, kept in its directory; pipeline_file: the file the run recorded (older runs keep no copy); record: the steps the run has on record (why: `note`) */
  from: 'pipeline_copy' | 'pipeline_file' | 'record';
  /** the file, as the run recorded it ('' when the run has no record yet) */
  file: string;
  /** why the plan is not the file's */
  note?: string;
  steps: PlanStep[];
}

/** What the plan reads of a run: its status (a door's too: queued, starting), its steps, the gate it waits at and the decisions taken. */
type RecordPart = Pick<RunRecord, 'steps' | 'current'> & Partial<Pick<RunRecord, 'running' | 'gate' | 'decisions'>> & { status: string };

/** Statuses of a run that has not ended. */
const LIVE = new Set(['queued', 'starting', 'running', 'awaiting_approval']);

/** The file's steps as a plan shows them. Pure. */
export function planSteps(steps: ReadonlyArray<StepFile>): PlanStepSpec[] {
  return steps.map((s) => {
    const approval = s.approval;
    const spec: PlanStepSpec = { id: s.id, kind: approval ? 'approval' : s.agent !== undefined ? 'agent' : 'run' };
    if (s.name) spec.title = s.name;
    if (s.agent !== undefined) spec.agent = s.agent;
    if (s.needs) spec.needs = [...s.needs];
    if (s.for_each !== undefined) spec.forEach = s.for_each;
    if (s.route) spec.route = { output: s.route.output, to: [...new Set(Object.values(s.route.to))] };
    if (s.verify) spec.verify = true;
    if (approval) {
      spec.approval = { prompt: approval.prompt };
      if (approval.timeout !== undefined) spec.approval.timeout = String(approval.timeout);
    }
    return spec;
  });
}

/** The steps on record as a plan (when the file cannot be trusted): each id once, in the order it first ran, the gate's step too. Pure. */
export function recordSteps(r: RecordPart): PlanStepSpec[] {
  const specs = new Map<string, PlanStepSpec>();
  for (const s of [...(r.steps ?? []), ...running(r)]) {
    const spec = specs.get(s.id) ?? { id: s.id, kind: 'run' as PlanKind };
    if ('agent' in s && s.agent) Object.assign(spec, { kind: 'agent', agent: s.agent });
    if ('item' in s && s.item) spec.forEach = spec.forEach ?? '';
    specs.set(s.id, spec);
  }
  for (const s of r.steps ?? []) if (s.approval) Object.assign(specs.get(s.id) ?? {}, { kind: 'approval', approval: { prompt: '' } });
  const gate = r.gate;
  if (gate && typeof gate.id === 'string') {
    const spec = specs.get(gate.id) ?? { id: gate.id, kind: 'approval' as PlanKind };
    Object.assign(spec, { kind: 'approval', approval: { prompt: typeof gate.prompt === 'string' ? gate.prompt : '' } });
    specs.set(gate.id, spec);
  }
  return [...specs.values()];
}

/** Each step with where it stands in run `r`, and its runs by name. Pure. */
export function planStates(specs: ReadonlyArray<PlanStepSpec>, r: RecordPart): PlanStep[] {
  const now = running(r);
  const live = LIVE.has(r.status);
  return specs.map((spec) => {
    const ran = (r.steps ?? []).filter((s) => s.id === spec.id);
    const runs = ran.map((s) => resultName(s));
    const runningNow = now.filter((x) => x.id === spec.id);
    for (const x of runningNow) if (!runs.includes(x.name)) runs.push(x.name);
    let state: PlanState;
    const gate = r.gate && r.gate.id === spec.id ? r.gate : undefined;
    const decided = (r.decisions ?? []).filter((d) => baseId(d.step) === spec.id).pop();
    if (gate && r.status === 'awaiting_approval') state = decided && Date.parse(decided.at) >= Date.parse(gate.since) ? decided.decision : 'awaiting_approval';
    else if (decided && !runningNow.length) state = decided.decision;
    else if (runningNow.length) state = 'running';
    else if (ran.length) state = ended(ran);
    else state = live ? 'pending' : 'not_run';
    return { ...spec, state, runs };
  });
}

/** A unit's step id: `approve#2` → `approve`, `build[1]` → `build`. */
function baseId(name: string): string {
  return name.replace(/#\d+$/, '').replace(/\[\d+\]$/, '');
}

/** How a step's runs ended: a for_each step's first instance (by its latest run) that did not complete, else its last run's status. */
function ended(ran: RunRecord['steps']): PlanState {
  const latest = new Map<string, StepStatus>();
  for (const s of ran) latest.set(resultName(s).replace(/#\d+$/, ''), s.status);
  if (latest.size > 1) for (const st of latest.values()) if (st !== 'completed' && st !== 'skipped') return st;
  return ran[ran.length - 1]!.status;
}

/** The steps running now: `running`, or `current` in the records of older runners (only while the run runs). */
function running(r: RecordPart): Array<{ id: string; name: string }> {
  if (r.status !== 'running') return [];
  if (Array.isArray(r.running)) return r.running.map((x) => ({ id: x.id, name: x.name ?? x.id }));
  return r.current ? [{ id: r.current.id, name: r.current.id }] : [];
}

/** Parsed files by path, with the size and time they were read at: a page polling a run reads its file once. */
const parsed = new Map<string, { size: number; mtimeMs: number; specs: PlanStepSpec[] }>();
const PARSED_KEPT = 100;

/**
 * The plan of run `r`, from its recorded pipeline file; from the steps on
 * record, saying why, when that file is not the one it ran with (gone, changed
 * since the run started, unreadable, or without a step the run ran).
 */
export async function planOf(r: RecordPart & Pick<RunRecord, 'pipelineFile' | 'startedAt'> & Partial<Pick<RunRecord, 'pipelineCopy'>>, runDir?: string): Promise<RunPlan> {
  const file = r.pipelineFile;
  const fromRecord = (note: string): RunPlan => ({ from: 'record', file, note, steps: planStates(recordSteps(r), r) });
  // the file as the run first read it, kept in its directory (runners since approval gates): what it runs with, whatever became of the file since
  if (runDir && r.pipelineCopy && path.basename(r.pipelineCopy) === r.pipelineCopy) {
    const copy = path.join(runDir, r.pipelineCopy);
    const specs = await specsOf(copy).catch(() => undefined);
    if (specs && !missingSteps(specs, r).length) return { from: 'pipeline_copy', file, steps: planStates(specs, r) };
  }
  if (!file) return fromRecord('the run recorded no pipeline file: the steps listed are those on record');
  let st;
  try {
    st = await stat(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return fromRecord(`the pipeline file ${file} ${code === 'ENOENT' ? 'is gone' : `cannot be read (${code ?? errorMessage(err)})`}: the steps listed are those on record, steps not started yet are not known`);
  }
  const started = Date.parse(r.startedAt);
  if (Number.isFinite(started) && st.mtimeMs > started + 1000) {
    return fromRecord(`the pipeline file ${file} changed after the run started (modified ${st.mtime.toISOString()}): the steps listed are those on record, steps not started yet are not known`);
  }
  let specs: PlanStepSpec[];
  try {
    specs = await specsOf(file);
  } catch (err) {
    return fromRecord(`the pipeline file ${file} does not load now (${errorMessage(err).split('\n').slice(0, 2).join(': ').trim()}): the steps listed are those on record`);
  }
  const missing = missingSteps(specs, r);
  if (missing.length) return fromRecord(`the pipeline file ${file} has no step ${missing.join(', ')} the run ran: it changed since, and the steps listed are those on record`);
  return { from: 'pipeline_file', file, steps: planStates(specs, r) };
}

/** A pipeline file's steps as a plan shows them, parsed once per size and modification time. */
async function specsOf(file: string): Promise<PlanStepSpec[]> {
  const st = await stat(file);
  const known = parsed.get(file);
  if (known && known.size === st.size && known.mtimeMs === st.mtimeMs) return known.specs;
  const specs = planSteps((await loadPipeline(file)).pipeline.steps);
  parsed.delete(file);
  parsed.set(file, { size: st.size, mtimeMs: st.mtimeMs, specs });
  while (parsed.size > PARSED_KEPT) parsed.delete(parsed.keys().next().value!);
  return specs;
}

/** The steps the run ran that the plan has not: a file changed since. */
function missingSteps(specs: ReadonlyArray<PlanStepSpec>, r: RecordPart): string[] {
  const ids = new Set(specs.map((s) => s.id));
  return [...new Set([...(r.steps ?? []), ...running(r)].map((s) => s.id))].filter((id) => !ids.has(id));
}
