/**
 * A run's plan: every step of its pipeline in the file's order, each with
 * where it stands now (pending, running, waiting at its gate, how its last
 * run ended, or not run once the run ended without it) and its runs on record
 * by name (`implement`, `implement#2`, `build[0]`). So a reader sees from the
 * start what a run will do, not only what it did: the run page's steps table,
 * GET /api/runs/:id, and any door that shows a run.
 *
 * The steps come from the pipeline file the run recorded (record.pipelineFile).
 * When that file is gone, unreadable, changed since the run started, or no
 * longer holds a step the run ran, the plan is the steps on record instead,
 * and says why: a plan read from a file the run did not run with would show
 * steps it never had.
 *
 * planSteps and planStates are pure; planOf reads the file (cached by its
 * size and modification time, so a page polling every two seconds parses it once).
 */
import { stat } from 'node:fs/promises';
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
  /** pipeline_file: the steps of the file the run recorded; record: the steps the run has on record (why: `note`) */
  from: 'pipeline_file' | 'record';
  /** the file, as the run recorded it ('' when the run has no record yet) */
  file: string;
  /** why the plan is not the file's */
  note?: string;
  steps: PlanStep[];
}

/** The gate the lead's approval steps put on the record: what it asks, and once decided, the decision. */
interface GateOnRecord {
  step: string;
  prompt?: string;
  since?: string;
  deadline?: string | null;
  decision?: { decision: 'approved' | 'rejected'; by?: unknown; via?: string; at?: string; comment?: string } | null;
}

/** What the plan reads of a run: its status (a door's too: queued, starting; a gate's awaiting_approval), its steps, the gate when it has one. */
type RecordPart = Pick<RunRecord, 'steps' | 'current'> & Partial<Pick<RunRecord, 'running'>> & { status: string; gate?: GateOnRecord | null };

/** Statuses of a run that has not ended. */
const LIVE = new Set(['queued', 'starting', 'running', 'awaiting_approval']);

/** The file's steps as a plan shows them. Pure. */
export function planSteps(steps: ReadonlyArray<StepFile>): PlanStepSpec[] {
  return steps.map((s) => {
    const approval = (s as StepFile & { approval?: { prompt?: unknown; timeout?: unknown } }).approval;
    const spec: PlanStepSpec = { id: s.id, kind: approval ? 'approval' : s.agent !== undefined ? 'agent' : 'run' };
    if (s.name) spec.title = s.name;
    if (s.agent !== undefined) spec.agent = s.agent;
    if (s.needs) spec.needs = [...s.needs];
    if (s.for_each !== undefined) spec.forEach = s.for_each;
    if (s.route) spec.route = { output: s.route.output, to: [...new Set(Object.values(s.route.to))] };
    if (s.verify) spec.verify = true;
    if (approval) {
      spec.approval = { prompt: typeof approval.prompt === 'string' ? approval.prompt : '' };
      if (typeof approval.timeout === 'string' || typeof approval.timeout === 'number') spec.approval.timeout = String(approval.timeout);
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
  const gate = r.gate;
  if (gate && typeof gate.step === 'string') {
    const spec = specs.get(gate.step) ?? { id: gate.step, kind: 'approval' as PlanKind };
    Object.assign(spec, { kind: 'approval', approval: { prompt: typeof gate.prompt === 'string' ? gate.prompt : '' } });
    specs.set(gate.step, spec);
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
    const gate = r.gate && r.gate.step === spec.id ? r.gate : undefined;
    if (gate?.decision && (gate.decision.decision === 'approved' || gate.decision.decision === 'rejected')) state = gate.decision.decision;
    else if (gate && r.status === 'awaiting_approval') state = 'awaiting_approval';
    else if (runningNow.length) state = 'running';
    else if (ran.length) state = ended(ran);
    else state = live ? 'pending' : 'not_run';
    return { ...spec, state, runs };
  });
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
export async function planOf(r: RecordPart & Pick<RunRecord, 'pipelineFile' | 'startedAt'>): Promise<RunPlan> {
  const file = r.pipelineFile;
  const fromRecord = (note: string): RunPlan => ({ from: 'record', file, note, steps: planStates(recordSteps(r), r) });
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
  const known = parsed.get(file);
  if (known && known.size === st.size && known.mtimeMs === st.mtimeMs) specs = known.specs;
  else {
    try {
      specs = planSteps((await loadPipeline(file)).pipeline.steps);
    } catch (err) {
      return fromRecord(`the pipeline file ${file} does not load now (${errorMessage(err).split('\n').slice(0, 2).join(': ').trim()}): the steps listed are those on record`);
    }
    parsed.delete(file);
    parsed.set(file, { size: st.size, mtimeMs: st.mtimeMs, specs });
    while (parsed.size > PARSED_KEPT) parsed.delete(parsed.keys().next().value!);
  }
  const ids = new Set(specs.map((s) => s.id));
  const missing = [...new Set([...(r.steps ?? []), ...running(r)].map((s) => s.id))].filter((id) => !ids.has(id));
  if (missing.length) return fromRecord(`the pipeline file ${file} has no step ${missing.join(', ')} the run ran: it changed since, and the steps listed are those on record`);
  return { from: 'pipeline_file', file, steps: planStates(specs, r) };
}
