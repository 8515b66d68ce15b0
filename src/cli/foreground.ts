/**
 * A run in the foreground of a terminal (runner exec, resume, fork, and an
 * approve nobody waits for): its reporter, its signals (Ctrl-C cancels
 * politely, again kills), its engine; and at a gate, the wait: it says how to
 * decide, holds nothing but a lock that says it waits, and goes on when
 * someone approves (from any door), or ends when someone rejects.
 */
import { warmPool } from '../run/warm/warm-pool.js';
import type { GatewayPool } from '../gateway/host/gateway-pool.js';
import { errorMessage, RunnerError } from '../common/errors.js';
import { formatDuration } from '../common/durations.js';
import { openEngine } from '../container/engine.js';
import { Git } from '../git/git.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { holdGateWaiter } from '../run/gate-waiter.js';
import { decisionFor } from '../run/gate.js';
import { executeRun, type ExecOptions } from '../run/orchestrator.js';
import { summarize, type RunRecord } from '../run/record.js';
import { readRun } from '../run/records.js';
import { readSecretsFile } from '../run/secrets-file.js';
import type { RunSettings } from '../settings/run-settings.js';
import { cliDoor } from '../runs/door.js';
import { expireGate } from '../runs/decide.js';
import { prepareResume } from '../runs/resume.js';
import { RunnerHome } from '../workspace/home.js';
import { onClosedPipe } from './closed-pipe.js';
import { ConsoleReporter } from './console-reporter.js';
import { exitCodeForRun } from './exit-codes.js';
import { cliActor } from './os-user.js';

export interface Foreground {
  home: string;
  settings: RunSettings;
  json: boolean;
  /** warnings of the settings, said once the reporter is there */
  early?: string[];
  /** wait at a gate (the default) or leave the run waiting there and exit */
  waitAtGate?: boolean;
  /** step gateways to make ahead, from the start (--warm N): the run's steps behind a gateway take them */
  warm?: number;
}

/** How often a waiting exec reads the run's record. */
const GATE_POLL_MS = 1000;

export async function runForeground(f: Foreground, loaded: LoadedPipeline, opts: Omit<ExecOptions, 'loaded' | 'home' | 'settings' | 'secretSource'>): Promise<number> {
  const fromFile = f.settings.secretsFile ? await readSecretsFile(f.settings.secretsFile) : {};
  const stepOut = f.json ? process.stderr : process.stdout;
  const live = !f.json && process.stderr.isTTY === true && !process.env.CI;
  const reporter = new ConsoleReporter(stepOut, process.stderr, live);
  for (const m of f.early ?? []) reporter.warn(m);

  const cancel = new AbortController();
  const kill = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (!cancel.signal.aborted) {
      reporter.warn(`${sig}: canceling; the step is stopped, its work committed, the worktree removed (again to kill at once)`);
      cancel.abort();
    } else if (!kill.signal.aborted) {
      reporter.warn(`${sig} again: killing the step's container now`);
      kill.abort();
    }
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const sig of signals) process.on(sig, onSignal);
  // its output closed (runner exec p.yaml | head -1): the run is canceled as on SIGPIPE, its work committed
  const offClosedPipe = onClosedPipe(() => onSignal('SIGPIPE'));
  let pool: GatewayPool | undefined;
  try {
    const engine = openEngine(f.settings.engine.name, f.settings.engine);
    // made while the run gets ready (its worktree, its checks), so that its first step's gateway is up sooner; where
    // the engine's steps have theirs (a swarm's manager, on overlays the nodes share)
    pool = f.warm ? warmPool(engine, { size: f.warm, home: f.home, settings: f.settings, onProblem: (m) => reporter.warn(m), command: 'exec' }) : undefined;
    void pool?.start();
    const deps = { ...engine, ...(pool ? { warmGateways: pool } : {}), makeGit: (who: ConstructorParameters<typeof Git>[0]) => new Git(who), clock: () => new Date(), reporter, signal: cancel.signal, killSignal: kill.signal };
    const base = { home: f.home, settings: f.settings, keepWorkspace: false, secretSource: { ...process.env, ...fromFile } };
    let record = await orJsonError(f.json, () => executeRun(deps, { ...base, ...opts, loaded }));
    // At a gate: wait for a decision from any door, then go on (there may be more gates).
    while (record.status === 'awaiting_approval' && f.waitAtGate !== false && !cancel.signal.aborted) {
      const next = await waitAtGate(f.home, record, reporter, cancel.signal);
      if (next.status !== 'awaiting_approval' || !next.gate || decisionFor(next.decisions, next.gate.name)?.decision !== 'approved') {
        record = next;
        break;
      }
      const prepared = await prepareResume(cliDoor(new RunnerHome(f.home)), record.runId, { how: 'approval', by: cliActor() });
      record = await executeRun(deps, { ...base, ...opts, loaded: prepared.loaded, continuation: prepared.continuation, inputs: prepared.inputs, startedBy: cliActor() });
    }
    reporter.close();
    if (f.json) process.stdout.write(`${JSON.stringify(summarize(record))}\n`);
    if (record.status === 'awaiting_approval') return 0; // left waiting (--no-wait-at-gate, or Ctrl-C at the gate): it holds nothing
    return exitCodeForRun(record.status, record.error?.code);
  } finally {
    await pool?.close();
    reporter.close();
    for (const sig of signals) process.off(sig, onSignal);
    offClosedPipe();
  }
}

/**
 * Waits at the run's gate until its record says a decision was taken (or the
 * gate timed out, or Ctrl-C: then the run is left waiting, holding nothing).
 */
async function waitAtGate(home: string, rec: RunRecord, reporter: ConsoleReporter, signal: AbortSignal): Promise<RunRecord> {
  const gate = rec.gate!;
  const runsDir = new RunnerHome(home).runs;
  const waiter = await holdGateWaiter(home, rec.runId);
  reporter.info(
    // the prompt was said as the run reached the gate (step NAME waits for approval: PROMPT): said once
    `run ${rec.runId} waits at gate ${gate.name} until ${gate.deadline.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')} (in ${formatDuration(Math.max(0, Date.parse(gate.deadline) - Date.now()))}; then it ends rejected, timed out)\n` +
      `  read its work: runner diff ${rec.runId}${rec.branch ? ` (branch ${rec.branch})` : ''}\n` +
      `  decide from another terminal: runner approve ${rec.runId} [--comment TEXT]  or  runner reject ${rec.runId} [--comment TEXT]\n` +
      `  (or from the dashboard, the API or MCP; Ctrl-C leaves it waiting, holding nothing)`,
  );
  try {
    for (;;) {
      if (signal.aborted) {
        reporter.warn(`run ${rec.runId} is left waiting at gate ${gate.name}; decide with runner approve ${rec.runId} or runner reject ${rec.runId}`);
        return readRun(runsDir, rec.runId);
      }
      const now = new Date();
      if (now.getTime() >= Date.parse(gate.deadline)) await expireGate(runsDir, home, rec.runId, now).catch(() => false);
      const cur = await readRun(runsDir, rec.runId);
      if (cur.status !== 'awaiting_approval' || (cur.gate && decisionFor(cur.decisions, cur.gate.name))) {
        const d = cur.gate ? decisionFor(cur.decisions, cur.gate.name) : cur.decisions?.[cur.decisions.length - 1];
        if (cur.status === 'rejected') reporter.warn(`run ${rec.runId}: ${cur.error?.message ?? 'rejected'}`);
        else if (d?.decision === 'approved') reporter.info(`run ${rec.runId}: gate ${gate.name} approved; going on`); // who and what they said: the run's next line
        else if (cur.status === 'running') reporter.info(`run ${rec.runId} was continued by another process`);
        return cur;
      }
      // one listener at a time: a gate polled every second for days added one per poll (MaxListenersExceededWarning after 10 s)
      await new Promise<void>((resolve) => {
        const stop = () => (clearTimeout(t), resolve());
        const t = setTimeout(() => (signal.removeEventListener('abort', stop), resolve()), GATE_POLL_MS);
        signal.addEventListener('abort', stop, { once: true });
      });
    }
  } finally {
    await waiter?.release();
  }
}

/** With --json, a run that cannot start (its settings, its engine) still prints one object: its error. */
export async function orJsonError<T>(json: boolean, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (json) {
      const code = err instanceof RunnerError ? err.code : 'internal';
      process.stdout.write(`${JSON.stringify({ runId: null, status: 'error', error: { code, message: errorMessage(err) } })}\n`);
    }
    throw err;
  }
}
