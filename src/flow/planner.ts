/**
 * The flow planner: given the pipeline's flow and what happened so far, what
 * runs next. It decides; the orchestrator does (starts containers, merges
 * branches) and tells it how each thing ended. Pure: no I/O, no clock (the
 * caller passes `now`), deterministic.
 *
 * A step is entered when every step it needs is done (succeeded, or failed
 * with continue_on_error); entering counts a visit and makes its units (one,
 * or one per for_each item). A unit runs, and runs again after a failure
 * while its retries last; a unit of a lane step is then merged back, in file
 * order. When every unit of a step is settled the step is done, and its route
 * may send the run back: the steps of the loop go idle again, or, when the
 * target has used its visits, the run ends with loop_limit.
 */
import type { StepStatus } from '../run/step-result.js';
import { parseItems } from './items.js';

/** Retries wait their backoff, doubling, up to this. */
export const MAX_BACKOFF_MS = 10 * 60_000;
export const DEFAULT_BACKOFF_MS = 10_000;
export const DEFAULT_MAX_VISITS = 3;

export interface FlowStep {
  id: string;
  /** indexes of the steps it needs */
  needs: number[];
  /** works on a branch of its own, merged back when it ends */
  lane: boolean;
  maxVisits: number;
  retries: { max: number; backoffMs: number };
  /** an output's value → the index of the step the run goes back to; each target's loop (the steps it runs again, graph.ts) */
  route?: { output: string; to: Record<string, number>; loops: Record<number, number[]> };
  forEach?: { from: { step: string; key: string } | { input: string }; maxParallel: number; maxItems: number };
  continueOnError: boolean;
  /** the outputs the file declares: a for_each step has each as a list, empty ones too */
  outputs: string[];
}

export interface FlowPlan {
  steps: FlowStep[];
  /** how many units run at once */
  maxParallel: number;
}

export interface Unit {
  /** the step's index */
  step: number;
  id: string;
  /** a for_each instance's index and item */
  item?: number;
  value?: string;
  /** counts every run of this unit in the run: visits and retries */
  attempt: number;
  /** `build[0]` for an instance, else the step id: names its branch */
  key: string;
  /** `implement#2`, `build[1]`: names its log, record entry and commit */
  name: string;
  lane: boolean;
}

export interface UnitEnd {
  status: StepStatus;
  /** the runner could not start the step or refused its work: never retried, always fails the run */
  error?: string;
  outputs: Record<string, string>;
}

/** What the planner made of a unit's end, for the record. */
export interface Verdict {
  /** it runs again after this long */
  retryInMs?: number;
  /** the step is failed for a reason of the planner's (a for_each list it made is bad) */
  failure?: string;
}

export interface RouteTaken {
  from: string;
  to: string;
  /** the output read, and its value */
  output: string;
  value: string;
  /** the visit of `to` the route starts */
  visit: number;
}

export interface FlowStop {
  code: 'loop_limit' | 'merge_conflict' | 'merge_failed' | 'bad_list';
  message: string;
  step: string;
  visits?: number;
  files?: string[];
}

export interface Next {
  start: Unit[];
  /** merge this lane back now (one at a time) */
  merge?: Unit;
  /** a retry waits until then (ms, the caller's clock) */
  wakeAt?: number;
  /** the run is over */
  done?: { status: 'succeeded' | 'failed' | 'canceled'; stop?: FlowStop };
}

type UnitPhase = 'ready' | 'running' | 'retry_wait' | 'ended' | 'merging' | 'settled';

interface UnitState {
  item?: number;
  value?: string;
  phase: UnitPhase;
  /** runs in this visit */
  tries: number;
  retryAt?: number;
  end?: UnitEnd;
  attempt: number;
  conflict?: boolean;
}

interface StepState {
  visits: number;
  phase: 'idle' | 'active' | 'done';
  outcome?: 'ok' | 'tolerated' | 'failed';
  units: UnitState[];
}

export class FlowPlanner {
  private readonly state: StepState[];
  private readonly attempts = new Map<string, number>();
  /** outputs by step id: a unit's latest; a for_each step's as JSON lists, in item order */
  readonly outputs = new Map<string, Record<string, string>>();
  readonly routes: RouteTaken[] = [];
  private stopping = false;
  private canceled = false;
  private failed = false;
  private stop?: FlowStop;

  constructor(
    private readonly plan: FlowPlan,
    private readonly inputs: Readonly<Record<string, string>> = {},
  ) {
    this.state = plan.steps.map(() => ({ visits: 0, phase: 'idle', units: [] }));
  }

  /** What to do now. Units it returns are running from then on. */
  next(now: number): Next {
    if (!this.stopping) {
      this.plan.steps.forEach((s, i) => {
        const st = this.state[i]!;
        if (st.phase === 'idle' && s.needs.every((n) => this.state[n]!.phase === 'done' && this.state[n]!.outcome !== 'failed')) this.enter(i);
      });
    }
    const start: Unit[] = [];
    let running = this.count('running');
    let wakeAt: number | undefined;
    this.plan.steps.forEach((s, i) => {
      let ofStep = this.state[i]!.units.filter((u) => u.phase === 'running').length;
      for (const u of this.state[i]!.units) {
        if (u.phase === 'retry_wait') {
          if (u.retryAt! <= now) u.phase = 'ready';
          else wakeAt = Math.min(wakeAt ?? Infinity, u.retryAt!);
        }
        if (u.phase !== 'ready' || this.stopping) continue;
        if (running >= this.plan.maxParallel || ofStep >= (s.forEach?.maxParallel ?? Infinity)) continue;
        u.phase = 'running';
        u.tries++;
        running++;
        ofStep++;
        start.push(this.unitOf(i, u, true));
      }
    });
    const merge = this.nextMerge();
    if (merge) merge.state.phase = 'merging';
    const next: Next = { start, ...(merge ? { merge: this.unitOf(merge.step, merge.state, false) } : {}), ...(wakeAt !== undefined ? { wakeAt } : {}) };
    if (!start.length && !merge && this.idle()) {
      const status = this.canceled ? 'canceled' : this.failed || this.stop ? 'failed' : 'succeeded';
      next.done = { status, ...(this.stop ? { stop: this.stop } : {}) };
      delete next.wakeAt;
    }
    return next;
  }

  /** A unit's run ended. */
  finished(unit: Unit, end: UnitEnd, now: number): Verdict {
    const st = this.state[unit.step]!;
    const u = this.unitState(unit);
    const step = this.plan.steps[unit.step]!;
    const verdict: Verdict = {};
    end = { ...end, outputs: ownCopy(end.outputs) };
    // A for_each step's list is checked once its instances' outputs are put together (settle).
    if (end.status === 'completed' && !step.forEach) {
      const bad = this.badList(step.id, end.outputs);
      if (bad) {
        end.status = 'failed';
        end.error = 'bad_list';
        verdict.failure = bad;
        this.stop ??= { code: 'bad_list', step: step.id, message: `step ${unit.name} made a for_each list that cannot be used: ${bad}` };
      }
    }
    u.end = end;
    if (!step.forEach) this.outputs.set(step.id, end.outputs);
    const retryable = ['failed', 'timed_out', 'oom', 'node_lost'].includes(end.status) && !end.error;
    if (retryable && !this.stopping && u.tries <= step.retries.max) {
      const wait = Math.min(step.retries.backoffMs * 2 ** (u.tries - 1), MAX_BACKOFF_MS);
      u.phase = 'retry_wait';
      u.retryAt = now + wait;
      verdict.retryInMs = wait;
      return verdict;
    }
    // A canceled lane keeps its branch: nothing half-done is merged into the run.
    u.phase = step.lane && !this.canceled && end.status !== 'canceled' ? 'ended' : 'settled';
    // A failure the step does not tolerate stops the run now: nothing new starts while the lanes still merge.
    if (end.status !== 'completed' && end.status !== 'canceled' && (!step.continueOnError || end.error !== undefined)) {
      this.failed = true;
      this.halt();
    }
    if (st.units.every((x) => x.phase === 'settled')) this.settle(unit.step);
    return verdict;
  }

  /** A lane was merged back (or its merge conflicted: the run stops, the files named). */
  merged(unit: Unit, conflict?: { files: string[]; message: string; code?: 'merge_failed' }): void {
    const u = this.unitState(unit);
    u.phase = 'settled';
    if (conflict) {
      // Before the step settles: a step whose work did not come back fails, and takes no route.
      u.conflict = true;
      this.stop ??= { code: conflict.code ?? 'merge_conflict', step: unit.name, files: conflict.files, message: conflict.message };
      this.failed = true;
      this.halt();
    }
    if (this.state[unit.step]!.units.every((x) => x.phase === 'settled')) this.settle(unit.step);
  }

  /**
   * The run reached an approval gate (src/run/gate.ts): nothing more starts, what runs ends, and the gate's
   * unit is set aside without an outcome, so nothing after it is entered: the run waits there.
   */
  pauseAt(unit: Unit): void {
    this.unitState(unit).phase = 'settled';
    this.halt();
  }

  /** Ctrl-C, a cancel request: nothing more starts, nothing waits to retry, no lane is merged. */
  cancel(): void {
    this.canceled = true;
    this.halt();
  }

  /** Nothing more starts: a unit waiting to retry ends with its last attempt (a lane's still merged, unless canceled). */
  private halt(): void {
    this.stopping = true;
    this.state.forEach((st, i) => {
      const lane = this.plan.steps[i]!.lane && !this.canceled;
      for (const u of st.units) {
        if (u.phase === 'retry_wait' || (u.phase === 'ready' && u.tries > 0)) u.phase = lane ? 'ended' : 'settled';
        if (u.phase === 'ended' && this.canceled) u.phase = 'settled';
      }
    });
  }

  /** Units of entered steps that never started (the run stopped first): the record lists them as skipped. */
  unstarted(): Unit[] {
    const out: Unit[] = [];
    this.state.forEach((st, i) => {
      for (const u of st.units) if (u.tries === 0) out.push(this.unitOf(i, u, false));
    });
    return out;
  }

  /** The runner itself failed (it could not write a record, say): nothing more starts, lanes still merge. */
  abort(): void {
    this.failed = true;
    this.halt();
  }

  /** The state, for an error message. */
  describe(): string {
    return this.plan.steps.map((s, i) => `${s.id}:${this.state[i]!.phase}[${this.state[i]!.units.map((u) => u.phase).join(',')}]`).join(' ');
  }

  /** Steps never entered: the record lists them as skipped. */
  skipped(): string[] {
    return this.plan.steps.filter((_, i) => this.state[i]!.visits === 0).map((s) => s.id);
  }

  /** How many times each step was entered. */
  visits(id: string): number {
    return this.state[this.plan.steps.findIndex((s) => s.id === id)]?.visits ?? 0;
  }

  private enter(i: number): void {
    const step = this.plan.steps[i]!;
    const st = this.state[i]!;
    st.visits++;
    st.phase = 'active';
    st.outcome = undefined;
    if (!step.forEach) {
      st.units = [{ phase: 'ready', tries: 0, attempt: 0 }];
      return;
    }
    const from = step.forEach.from;
    const text = 'input' in from ? ownValue(this.inputs, from.input) : ownValue(this.outputs.get(from.step), from.key);
    const parsed = parseItems(text, step.forEach.maxItems);
    if ('problem' in parsed) {
      // Only a list from a step that failed and was let go (continue_on_error) gets here: a bad one fails the step that made it.
      st.units = [];
      st.phase = 'done';
      st.outcome = 'failed';
      this.failed = true;
      this.stop ??= { code: 'bad_list', step: step.id, message: `step ${step.id} cannot fan out: its for_each list ${parsed.problem}` };
      this.halt();
      return;
    }
    st.units = parsed.items.map((value, item) => ({ item, value, phase: 'ready' as const, tries: 0, attempt: 0 }));
    if (!st.units.length) this.settle(i);
  }

  private settle(i: number): void {
    const step = this.plan.steps[i]!;
    const st = this.state[i]!;
    st.phase = 'done';
    let listProblem: string | undefined;
    if (step.forEach) {
      const keys = new Set([...step.outputs, ...st.units.flatMap((u) => Object.keys(u.end?.outputs ?? {}))]);
      const outputs = ownCopy(Object.fromEntries([...keys].map((k) => [k, JSON.stringify(st.units.map((u) => ownValue(u.end?.outputs, k) ?? ''))])));
      this.outputs.set(step.id, outputs);
      listProblem = this.badList(step.id, outputs);
      if (listProblem) this.stop ??= { code: 'bad_list', step: step.id, message: `step ${step.id} made a for_each list that cannot be used: ${listProblem}` };
    }
    const bad = st.units.filter((u) => u.end?.status !== 'completed' || u.conflict);
    const refused = listProblem !== undefined || st.units.some((u) => u.end?.error !== undefined || u.conflict);
    st.outcome = !bad.length && !refused ? 'ok' : step.continueOnError && !refused ? 'tolerated' : 'failed';
    if (st.outcome === 'failed') {
      this.failed = true;
      this.halt();
      return;
    }
    if (st.outcome !== 'ok' || !step.route || this.stopping) return;
    const value = (ownValue(this.outputs.get(step.id), step.route.output) ?? '').trim();
    const target = Object.hasOwn(step.route.to, value) ? step.route.to[value] : undefined;
    if (target === undefined) return;
    const to = this.plan.steps[target]!;
    const visits = this.state[target]!.visits;
    if (visits >= to.maxVisits) {
      this.halt();
      this.stop ??= {
        code: 'loop_limit',
        step: to.id,
        visits,
        message: `step ${step.id} sent the run back to ${to.id} (${step.route.output}=${value}), which has used its ${to.maxVisits} visits (max_visits: ${to.maxVisits}): the run stops here, its work committed`,
      };
      return;
    }
    this.routes.push({ from: step.id, to: to.id, output: step.route.output, value, visit: visits + 1 });
    for (const b of step.route.loops[target]!) {
      const s = this.state[b]!;
      s.phase = 'idle';
      s.outcome = undefined;
      s.units = [];
    }
  }

  /** The first lane, in file order, that ended and has no started lane before it still to merge. */
  private nextMerge(): { step: number; state: UnitState } | undefined {
    if (this.state.some((st) => st.units.some((u) => u.phase === 'merging'))) return undefined;
    for (let i = 0; i < this.state.length; i++) {
      for (const u of this.state[i]!.units) {
        if (u.phase === 'ended') return { step: i, state: u };
        if (u.phase === 'running' || u.phase === 'retry_wait' || (u.phase === 'ready' && u.tries > 0)) return undefined;
      }
    }
    return undefined;
  }

  /** A for_each step that reads this step's output gets a list it cannot use: what is wrong with it. */
  private badList(id: string, outputs: Record<string, string>): string | undefined {
    for (const s of this.plan.steps) {
      const from = s.forEach?.from;
      if (!from || !('step' in from) || from.step !== id) continue;
      const parsed = parseItems(ownValue(outputs, from.key), s.forEach!.maxItems);
      if ('problem' in parsed) return `output ${from.key}, the for_each list of step ${s.id}: ${parsed.problem}`;
    }
    return undefined;
  }

  private idle(): boolean {
    return this.state.every((st) => st.units.every((u) => u.phase === 'settled' || (this.stopping && u.phase === 'ready' && u.tries === 0)))
      && (this.stopping || !this.plan.steps.some((s, i) => this.state[i]!.phase === 'idle' && s.needs.every((n) => this.state[n]!.phase === 'done' && this.state[n]!.outcome !== 'failed')));
  }

  private count(phase: UnitPhase): number {
    return this.state.reduce((n, st) => n + st.units.filter((u) => u.phase === phase).length, 0);
  }

  private unitState(unit: Unit): UnitState {
    const u = this.state[unit.step]!.units.find((x) => x.item === unit.item);
    if (!u) throw new Error(`flow: no unit ${unit.name}`);
    return u;
  }

  private unitOf(i: number, u: UnitState, newAttempt: boolean): Unit {
    const step = this.plan.steps[i]!;
    const key = u.item === undefined ? step.id : `${step.id}[${u.item}]`;
    if (newAttempt) {
      u.attempt = (this.attempts.get(key) ?? 0) + 1;
      this.attempts.set(key, u.attempt);
    }
    return {
      step: i,
      id: step.id,
      ...(u.item !== undefined ? { item: u.item, value: u.value! } : {}),
      attempt: u.attempt,
      key,
      name: u.attempt > 1 ? `${key}#${u.attempt}` : key,
      lane: step.lane,
    };
  }
}

/** A value the object itself holds, never one it inherits (an output named constructor or __proto__ is just a name). */
export function ownValue(o: Readonly<Record<string, string>> | undefined, key: string): string | undefined {
  return o !== undefined && Object.hasOwn(o, key) && typeof o[key] === 'string' ? o[key] : undefined;
}

/** A plain copy without a prototype: reading any name from it gives only what was put there. */
function ownCopy(o: Readonly<Record<string, string>>): Record<string, string> {
  return Object.assign(Object.create(null) as Record<string, string>, o);
}

/** A unit's key where names allow no brackets (its branch, worktree and container): `api`, `build.0` for `build[0]`. */
export function laneName(key: string): string {
  return key.replace(/\[(\d+)\]/, '.$1');
}
