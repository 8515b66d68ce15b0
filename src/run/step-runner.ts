/**
 * Runs one container to its end and says why it ended. Races the step's
 * failure sources (its exit, its timeout, a cancel) and records the first
 * cause once. The container is always removed, its logs drained first.
 */
import type { ContainerRuntime, ContainerSpec, ExitState, OutputHandler } from '../container/runtime.js';
import { errorMessage } from '../common/errors.js';
import type { EndReason } from './step-result.js';

export interface ContainerRunOptions {
  timeoutMs: number;
  /** polite cancel: stop with a grace period */
  signal: AbortSignal;
  /** impatient cancel (a second Ctrl-C): kill now */
  killSignal: AbortSignal;
  graceSeconds: number;
  onStdout: OutputHandler;
  onStderr: OutputHandler;
  onCleanupError: (message: string) => void;
  /** how long a container the runner ended may outlive its kill before it is given up on (default 30 s) */
  abandonAfterKillMs?: number;
}

export interface ContainerEnd {
  reason: EndReason;
  exitCode: number | null;
  oomKilled: boolean;
  durationMs: number;
  /** the engine never reports a kill at the memory cap (ExitState.oomUnreported) */
  oomUnreported?: boolean;
  /** forks refused at the pids limit, when the cgroup could be read */
  pidsLimitHits?: number;
  /** where it ran, when the engine says (swarm) */
  node?: string;
  /** why it ended that the exit code cannot say (swarm: a lost node, a rejected task) */
  problem?: ExitState['problem'];
}

export async function runContainer(
  runtime: ContainerRuntime,
  spec: ContainerSpec,
  o: ContainerRunOptions,
): Promise<ContainerEnd> {
  const handle = await runtime.create(spec);
  const t0 = performance.now();
  let reason: EndReason | undefined;
  const cleanups: Array<() => void> = [];
  try {
    const { ended: streamsEnded, close } = await handle.attach(o.onStdout, o.onStderr);
    const giveUp = new AbortController();
    const preStart = handle.wait(giveUp.signal);
    preStart.catch(() => undefined);
    if (o.signal.aborted) {
      // Never started: its attach stream and wait would hold the engine's connection (and the process) open.
      close();
      giveUp.abort();
      return { reason: 'canceled', exitCode: null, oomKilled: false, durationMs: 0 };
    }
    await handle.start();
    // The engine may register the first wait only after a fast step has
    // already exited; a second one, sent after start, cannot miss it.
    const waited = Promise.race([preStart, handle.waitNotRunning()]);

    // The cgroup goes with the container: read its pids events while it runs.
    let pidsLimitHits: number | undefined;
    const pollPids = async () => {
      const n = await handle.pidsLimitHits().catch(() => undefined);
      if (n !== undefined) pidsLimitHits = Math.max(pidsLimitHits ?? 0, n);
    };
    // At once (to find the cgroup while the container lives), then often: a step that dies of its fork
    // failures within the first second must still be reported as hitting the pids limit.
    void pollPids();
    const poller = setInterval(() => void pollPids(), 250);
    cleanups.push(() => clearInterval(poller));

    // A container the runner ended must be gone soon after: one the engine does not end (a wedged sandbox)
    // is killed, and one that outlives its kill too is given up on, so no run waits on it for ever.
    let abandon: (() => void) | undefined;
    const abandoned = new Promise<'abandoned'>((resolve) => (abandon = () => resolve('abandoned')));
    const killNow = () => handle.kill().catch((err) => o.onCleanupError(`killing container: ${errorMessage(err)}`));
    let escalation: NodeJS.Timeout | undefined;
    const escalate = (afterMs: number) => {
      if (escalation) return;
      escalation = setTimeout(() => {
        void killNow();
        escalation = setTimeout(() => abandon?.(), o.abandonAfterKillMs ?? 30_000);
      }, afterMs);
    };
    cleanups.push(() => clearTimeout(escalation));
    const end = (r: EndReason) => {
      if (reason) return;
      reason = r;
      escalate(o.graceSeconds * 1000 + (o.abandonAfterKillMs ?? 30_000));
      void pollPids().finally(() =>
        handle.stop(o.graceSeconds).catch((err) => o.onCleanupError(`stopping container: ${errorMessage(err)}`)),
      );
    };
    const kill = () => {
      reason ??= 'canceled';
      void killNow();
      escalate(0);
    };
    const timer = setTimeout(() => end('timeout'), o.timeoutMs);
    const onCancel = () => end('canceled');
    o.signal.addEventListener('abort', onCancel);
    o.killSignal.addEventListener('abort', kill);
    cleanups.push(() => {
      clearTimeout(timer);
      o.signal.removeEventListener('abort', onCancel);
      o.killSignal.removeEventListener('abort', kill);
    });
    if (o.signal.aborted) onCancel();

    if ((await Promise.race([waited, abandoned])) === 'abandoned') {
      const durationMs = Math.round(performance.now() - t0);
      close();
      const message = `the engine did not end the container ${handle.id} after its stop and kill; it is removed by force (a wedged engine or sandbox: see the engine's log)`;
      return { reason: reason ?? 'canceled', exitCode: null, oomKilled: false, durationMs, problem: { status: 'failed', message } };
    }
    reason ??= 'exit';
    const durationMs = Math.round(performance.now() - t0);
    // Drain what the step printed before the container goes.
    await withDeadline(streamsEnded, 5000);
    const state = await exitState(handle, reason);
    return {
      reason,
      exitCode: state.exitCode,
      oomKilled: state.oomKilled,
      ...(state.oomUnreported ? { oomUnreported: true } : {}),
      durationMs,
      ...(pidsLimitHits !== undefined ? { pidsLimitHits } : {}),
      ...(state.node ? { node: state.node } : {}),
      ...(state.problem ? { problem: state.problem } : {}),
    };
  } finally {
    for (const c of cleanups) c();
    await handle.remove().catch((err) => o.onCleanupError(`removing container ${handle.id}: ${errorMessage(err)}`));
  }
}

/** Waits for `p`, but no longer than `ms`; the timer does not keep the process alive. */
function withDeadline(p: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

/**
 * How the container ended. A step that died of SIGKILL (137) on its own, not by the runner's hand, and that the
 * engine has not (yet) marked OOM-killed is asked again for a while: the engine learns of an OOM kill by an event
 * of its own, which on a loaded machine was seen to come after the exit (under gVisor: `failed, exit 137` where
 * the memory cap had fired). The wait is only on that path; every other end is read once.
 */
export async function exitState(handle: { inspect(): Promise<ExitState> }, reason: string): Promise<ExitState> {
  let state = await handle.inspect();
  // an engine that never reports the kill is not asked again
  for (let i = 0; i < 15 && reason === 'exit' && state.exitCode === 137 && !state.oomKilled && !state.oomUnreported; i++) {
    await new Promise((r) => setTimeout(r, 200));
    state = await handle.inspect();
  }
  return state;
}
