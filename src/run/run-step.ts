/**
 * One step of a run: let the workspace check itself and give itself to the
 * step's user, run the container, read its outputs, and let the workspace
 * record what the step left (a commit, a patch, or a list of changes).
 */
import path from 'node:path';
import { formatSize } from '../common/durations.js';
import { ContainerError, errorMessage } from '../common/errors.js';
import { LineSplitter } from '../common/line-splitter.js';
import type { Masker } from '../common/mask.js';
import { LABELS, type ContainerSpec, type Mount } from '../container/runtime.js';
import { execSizeProblem } from '../plan/exec-size.js';
import { CONTAINER_PATHS, renderStep, type RunIdentity } from '../plan/render.js';
import { resolveUser, type StepPlan } from '../plan/step-plan.js';
import { CA_PATH, networkEnv, SYSTEM_BUNDLE_PATH } from '../plan/company-network.js';
import { verifyDirectory } from '../workspace/names.js';
import { removeTree } from '../workspace/remove-tree.js';
import type { Workspace } from '../workspace/workspace.js';
import { laneName, type Unit } from '../flow/planner.js';
import { commitMessage } from './commit-message.js';
import type { ExecDeps } from './orchestrator.js';
import { parseOutputs, readOutputsFile } from './outputs.js';
import { renderAgentEvent } from '../agents/render.js';
import { readAgentResult } from '../agents/result.js';
import { AGENT_RESULT_FILE } from '../agents/preset.js';
import { PRESETS } from '../agents/presets.js';
import { followAgentEvents } from './agent-follow.js';
import { classify, describeStatus, limitsHit, type StepResult } from './step-result.js';
import { runContainer } from './step-runner.js';
import { openStepWay, type RunSpending, type StepWay, type StepWayReport } from './step-network.js';
import { mountTransport, type Prepared } from './step-transport.js';
import type { RunStore } from './store.js';
import type { GatewayEvent } from '../gateway/config.js';
import { openStepCaches, type StepCaches } from '../cache/step-caches.js';
import { ownerAlive } from './owner-lock.js';

export interface StepContext {
  deps: ExecDeps;
  home: string;
  graceSeconds: number;
  plan: StepPlan;
  total: number;
  ws: Workspace;
  store: RunStore;
  masker: Masker;
  identity: RunIdentity;
  /** which run of which step (and item) this is: from the flow planner */
  unit: Unit;
  /** outputs of the steps that ran so far, by step id */
  outputs: ReadonlyMap<string, Record<string, string>>;
  secrets: Record<string, string>;
  /** the run's inputs, defaults filled in */
  inputs: Record<string, string>;
  /** budgets, prices and the way out, for a step behind a gateway */
  spending: RunSpending;
}

/** What a step's run ended with: its record entry, and its outputs as later steps see them (unmasked). */
export interface StepRun {
  result: StepResult;
  outputs: Record<string, string>;
}

export async function runStep(c: StepContext): Promise<StepRun> {
  const { deps, plan, ws, store, masker, unit } = c;
  const name = unit.name;
  const user = resolveUser(plan.user, ws.owner);
  const ioDir = await store.stepIoDir(name, user.uid, user.gid);
  const item = unit.item !== undefined ? { index: unit.item, value: unit.value ?? '' } : undefined;
  const rendered = renderStep(plan, c.outputs, c.identity, c.secrets, c.inputs, item);

  deps.reporter.stepStarted({ id: name, index: plan.index, total: c.total, image: plan.image, isolation: plan.isolation });
  const tooBig = execSizeProblem(rendered);
  if (tooBig) return { result: await refuseStep(c, ioDir, 'step_not_started', `not started: ${tooBig}`), outputs: {} };
  store.event('step_started', { step: name, attempt: unit.attempt, image: plan.image, user: `${user.uid}:${user.gid}`, network: plan.network, isolation: plan.isolation });
  const startedAt = deps.clock();

  const log = store.stepLog(name);
  const lineTo = (stream: 'stdout' | 'stderr') =>
    new LineSplitter(
      (raw) => {
        const line = masker.mask(raw);
        log.line(line);
        deps.reporter.stepLine(name, stream, line);
      },
      // a line cut at the limit loses as much again as the longest secret, so no prefix of one survives
      { guard: Math.max(128, masker.longest) },
    );
  const out = lineTo('stdout');
  const err = lineTo('stderr');

  // Right before the container is made, the workspace checks itself (still the
  // directory the runner created, git links intact) and goes to the step's user.
  await ws.prepareStep(user);
  await verifyDirectory(ioDir);
  let caches: StepCaches | undefined;
  try {
    caches = await stepCaches(c, user);
  } catch (err) {
    log.close();
    return { result: await refuseStep(c, ioDir, 'cache_failed', `not started: its caches could not be made ready: ${errorMessage(err)}`), outputs: {} };
  }
  for (const note of caches?.notes ?? []) {
    log.line(`runner: ${note}`);
    deps.reporter.stepLine(name, 'stderr', `runner: ${note}`);
  }
  let way: StepWay;
  // the run's or the day's budget spent by steps running at once: this one stops too
  const overBudget = new AbortController();
  // the way did not come up after the step's container started: the step stops, its gateway's failure said
  const wayLost = new AbortController();
  try {
    const place = deps.transport?.gateways;
    way = await openStepWay({
      runtime: place?.runtime ?? deps.runtime,
      relayTo: plan.gateway && place ? await place.relayTo() : undefined,
      tries: place,
      plan,
      name: `${containerName(c)}-gw`,
      labels: stepLabels(c),
      secrets: c.secrets,
      spending: c.spending,
      masker,
      timeoutMs: plan.timeoutMs,
      onOverBudget: (why) => {
        if (overBudget.signal.aborted) return;
        log.line(`runner gateway: ${why}: the step is stopped`);
        deps.reporter.stepLine(name, 'stderr', `runner gateway: ${why}: the step is stopped`);
        overBudget.abort();
      },
      onLost: (why) => {
        if (wayLost.signal.aborted) return;
        log.line(`runner gateway: ${masker.mask(why)}: the step is stopped`);
        deps.reporter.stepLine(name, 'stderr', `runner gateway: ${masker.mask(why)}: the step is stopped`);
        wayLost.abort();
      },
      onEvent: (e) =>
        gatewayEvent(c, e, (line) => {
          log.line(masker.mask(line));
          deps.reporter.stepLine(name, 'stderr', masker.mask(line));
        }),
    });
  } catch (err) {
    await caches?.close();
    log.close();
    return { result: await refuseStep(c, ioDir, 'gateway_failed', errorMessage(err)), outputs: {} };
  }
  // An agent's events, rendered into its log as they come (its transcript kept as it wrote them).
  const preset = plan.preset ? PRESETS[plan.preset] : undefined;
  const follow =
    preset &&
    followAgentEvents(
      path.join(ioDir, AGENT_RESULT_FILE),
      store.stepTranscriptPath(name),
      preset,
      (event) => {
        for (const l of renderAgentEvent(event)) out.push(Buffer.from(`${l}\n`));
      },
      (message) => log.line(`runner: ${message}`),
    );
  let end;
  let prepared: Prepared | undefined;
  let transferProblem: string | undefined;
  let wayReport: StepWayReport | undefined;
  let agent: Awaited<ReturnType<typeof readAgentResult>> | undefined;
  let notStarted: string | undefined;
  try {
    // a step on another node gets a copy of the branch's history as its .git (a local one sees the repository itself)
    const gitCopy = deps.transport?.remote && ws.gitCopy ? (into: string) => ws.gitCopy!(into) : undefined;
    const note = (text: string) => {
      log.line(`runner: ${text}`);
      deps.reporter.stepLine(name, 'stderr', `runner: ${text}`);
    };
    prepared = await (deps.transport ?? mountTransport).prepare(containerSpec(c, rendered, user, ioDir, way, caches), { workspace: ws.path, io: ioDir, owner: user, relay: way.relay, gitCopy, note });
    end = await runContainer(deps.runtime, prepared.spec, {
      timeoutMs: plan.timeoutMs,
      signal: AbortSignal.any([deps.signal, overBudget.signal, wayLost.signal]),
      killSignal: deps.killSignal,
      graceSeconds: c.graceSeconds,
      onStdout: (b) => {
        out.push(b);
        return deps.reporter.backpressure?.();
      },
      onStderr: (b) => {
        err.push(b);
        return deps.reporter.backpressure?.();
      },
      onCleanupError: (m) => deps.reporter.warn(m),
    });
  } catch (err) {
    // an image that cannot take the step's secrets out of the engine's sight: the step's, said before it runs
    // or whose way out did not come up (the step's log says why)
    if (!(err instanceof ContainerError && (err.code === 'no_shell' || err.code === 'way_failed'))) throw err;
    notStarted = errorMessage(err);
  } finally {
    // a step on another node sends its work back: the workspace and its outputs are here again before anything reads them
    transferProblem = await prepared?.finish();
    // the agent's last events (on another node: all of them) are in its log before the log ends
    await follow?.stop();
    out.end();
    err.end();
    // An agent preset's CLI left its machine-readable result: its final message and what it says it cost
    // (behind a gateway, only its turns and session count: the gateway's sums replace the rest).
    agent = plan.preset ? await readAgentResult(plan.preset, ioDir, plan.agentSettings ?? {}) : undefined;
    wayReport = await way
      .close(agent?.usage)
      .catch((e) => {
        deps.reporter.warn(`closing the step's gateway: ${errorMessage(e)}`);
        return undefined;
      });
    for (const r of wayReport?.refused ?? []) log.line(`runner gateway: refused ${r.host} ${r.count} time${r.count === 1 ? '' : 's'} in all`);
    if (wayReport?.pathsRefused) log.line(`runner gateway: refused ${wayReport.pathsRefused} request${wayReport.pathsRefused === 1 ? '' : 's'} that were not model calls`);
    // the container is gone: the step's caches are free again, and one it wrote is pruned back under its bound
    for (const note of (await caches?.close()) ?? []) log.line(`runner: ${note}`);
    log.close();
  }
  if (notStarted !== undefined || !end) return { result: await refuseStep(c, ioDir, 'step_not_started', `not started: ${notStarted ?? 'the container did not run'}`), outputs: {} };

  const overRun = overBudget.signal.aborted && !deps.signal.aborted;
  const status =
    (wayReport?.budgetExhausted && end.reason === 'exit') || overRun
      ? 'budget_exhausted'
      : end.problem && end.reason === 'exit'
        ? end.problem.status
        : wayReport?.died
          ? 'failed'
          : classify(end.reason, end.exitCode, end.oomKilled);
  const limits = limitsHit({ status, exitCode: end.exitCode, ...(end.pidsLimitHits !== undefined ? { pidsLimitHits: end.pidsLimitHits } : {}) });
  const limitText = limits.map((l) => describeLimit(l, plan));
  const messages = [...limitText];
  if (status === 'budget_exhausted') messages.push(overRun ? 'budget exhausted: the run\'s or the day\'s budget was spent while it ran (raise budget: in the pipeline file)' : 'budget exhausted: the gateway refused a model call (see the step\'s log; raise budget: in the pipeline file)');
  if (wayReport?.died) messages.push(wayReport.died);
  if (end.problem) messages.push(end.problem.message);
  if (transferProblem) messages.push(transferProblem);

  const read = await readOutputsFile(path.join(ioDir, 'output'));
  // The raw files may hold secrets; only the masked values are kept, in run.json.
  await removeTree(ioDir);
  const parsed = read.text !== undefined ? parseOutputs(read.text) : { values: {}, problems: [] };
  if (read.problem) messages.push(read.problem);
  for (const p of parsed.problems) messages.push(`outputs: ${p}`);
  if (agent?.problem) messages.push(agent.problem);
  if (agent?.error) messages.push(agent.error);
  const kept = Object.fromEntries(Object.entries(parsed.values).filter(([k]) => plan.outputs.includes(k) || k === 'summary'));
  // its final message was in its log, live, with the rest of its events
  if (agent?.result !== undefined) kept.result = agent.result;

  const result: StepResult = {
    id: plan.id,
    status,
    exitCode: end.exitCode,
    oomKilled: end.oomKilled,
    timedOut: end.reason === 'timeout',
    durationMs: end.durationMs,
    startedAt: startedAt.toISOString(),
    finishedAt: deps.clock().toISOString(),
    commit: null,
    outputs: Object.fromEntries(Object.entries(kept).map(([k, v]) => [k, masker.mask(v)])),
    limits,
    isolation: plan.isolation,
    ...(end.node ? { node: end.node } : {}),
    // behind a gateway, what the model API reported is the step's usage, whatever the CLI printed
    ...(wayReport?.usage ? { usage: wayReport.usage } : agent?.usage ? { usage: agent.usage } : {}),
    ...(wayReport?.refused.length ? { egress: { refused: wayReport.refused, ...(wayReport.refusedOthers ? { others: wayReport.refusedOthers } : {}) } } : {}),
    ...(plan.agent ? { agent: plan.agent } : {}),
    ...(wayReport?.error ? { error: wayReport.error } : {}),
    ...unitFields(unit),
  };

  const message = commitMessage({
    runId: c.identity.runId,
    stepId: name,
    actor: plan.agent ?? plan.image,
    status,
    exitCode: end.exitCode,
    limits: limitText,
    // masked before the subject is cut, so a cut cannot leave half a secret
    // the agent's final message stands in when the step wrote no summary
    ...((kept.summary ?? kept.result) !== undefined ? { summary: masker.mask((kept.summary ?? kept.result)!) } : {}),
  });
  const work = await ws.recordStep(masker.mask(message), store.stepPatchPath(name));
  result.commit = work.commit;
  if (work.changes) result.changes = await store.recordChanges(name, work.changes);
  if (work.error) {
    result.error = work.error;
    if (work.error === 'workspace_tampered') result.status = 'failed';
  }
  if (work.patch) result.patch = work.patch;
  if (work.unsaved) result.unsaved = true;
  if (work.notRecorded) result.notRecorded = work.notRecorded;
  // Work on no commit nor patch is what the step's status says first, whatever its exit (continue_on_error does not hide it).
  if (work.unsaved || work.notRecorded) result.status = 'not_recorded';
  if (work.message) messages.unshift(work.message);

  if (messages.length) result.message = masker.mask(messages.join('; '));
  store.event('step_finished', {
    step: name,
    status: describeStatus(result.status, end.exitCode),
    exitCode: end.exitCode,
    commit: result.commit,
    limits,
    durationMs: end.durationMs,
    ...(result.error ? { error: result.error } : {}),
  });
  deps.reporter.stepFinished(result);
  return { result, outputs: kept };
}

/** The flow's facts of a step's run, as its record entry keeps them. */
export function unitFields(unit: Unit): Pick<StepResult, 'attempt' | 'name' | 'item'> {
  return {
    attempt: unit.attempt,
    ...(unit.name !== unit.id ? { name: unit.name } : {}),
    ...(unit.item !== undefined ? { item: { index: unit.item, value: unit.value ?? '' } } : {}),
  };
}

/** A step the runner could not start for a reason of the step's own (or of its lane's): failed, with the reason, and the run stops there. */
export async function refuseStep(c: Pick<StepContext, 'deps' | 'plan' | 'unit' | 'masker' | 'store'>, ioDir: string | undefined, error: string, message: string): Promise<StepResult> {
  if (ioDir) await removeTree(ioDir);
  const now = c.deps.clock().toISOString();
  const result: StepResult = {
    id: c.plan.id,
    status: 'failed',
    exitCode: null,
    oomKilled: false,
    timedOut: false,
    durationMs: 0,
    startedAt: now,
    finishedAt: now,
    commit: null,
    outputs: {},
    limits: [],
    error,
    message: c.masker.mask(message),
    ...unitFields(c.unit),
  };
  c.store.event('step_finished', { step: c.unit.name, status: 'failed', error: result.error, message: result.message }, 'error');
  c.deps.reporter.stepFinished(result);
  return result;
}

/** unique per run of the step: an instance or a retry never meets an earlier one's container */
function containerName(c: StepContext): string {
  return `runner-${c.identity.runId}-${laneName(c.unit.key)}.${c.unit.attempt}`;
}

function stepLabels(c: StepContext): Record<string, string> {
  return {
    [LABELS.runId]: c.identity.runId,
    [LABELS.stepId]: c.plan.id,
    [LABELS.home]: c.home,
    [LABELS.pipeline]: c.identity.pipeline,
  };
}

/** What the step's gateway said as it happened: in the step's log, the run's events and calls.jsonl. */
function gatewayEvent(c: StepContext, e: GatewayEvent, logLine: (line: string) => void): void {
  const name = c.unit.name;
  if (e.event === 'call') {
    c.store.recordCall({ step: name, ...e });
    if (e.worstCase) {
      const tokens = e.inputTokens + e.outputTokens + e.cacheReadTokens + e.cacheWriteTokens;
      logLine(`runner gateway: a model call ended without its usage (the step hung up, or the answer was cut): charged its worst case, ${tokens} tokens${e.costUsd !== null ? `, $${e.costUsd.toFixed(4)}` : ''}`);
    }
    if (e.refused === 'budget') {
      logLine('runner gateway: model call refused: the budget is spent');
      c.store.event('budget_exhausted', { step: name }, 'warn');
    }
  } else if (e.event === 'refused') {
    logLine(`runner gateway: refused ${e.host} (${e.reason})`);
    c.store.event('egress_refused', { step: name, host: e.host, reason: e.reason }, 'warn');
  } else if (e.event === 'error') {
    logLine(`runner gateway: ${e.message}`);
    c.store.event('gateway_error', { step: name, message: e.message }, 'warn');
  }
}

/**
 * The project's caches the step names (src/cache/). A step on another node (swarm) cannot mount the runner's
 * disk: it runs without them, said in its log, and no setting points its tools at a directory that is not there.
 */
async function stepCaches(c: StepContext, user: { uid: number; gid: number }): Promise<StepCaches | undefined> {
  if (!c.plan.caches.length) return undefined;
  if (c.deps.transport?.remote) {
    const names = c.plan.caches.map((x) => x.name).join(', ');
    return { mounts: [], env: {}, notes: [`cache ${names}: not used on --engine swarm (a step on another node cannot mount the runner's disk); the step runs without`], close: async () => [] };
  }
  return openStepCaches({
    home: c.home,
    project: c.ws.project,
    caches: c.plan.caches,
    runId: c.identity.runId,
    user,
    alive: (runId) => ownerAlive(c.home, runId),
    signal: c.deps.signal,
    now: c.deps.clock,
  });
}

function containerSpec(
  c: StepContext,
  rendered: { cmd: string[]; env: Record<string, string>; secretEnv: Record<string, string> },
  user: { uid: number; gid: number },
  ioDir: string,
  way: StepWay,
  caches?: StepCaches,
): ContainerSpec {
  const { plan, ws } = c;
  const mounts: Mount[] = [
    { source: ws.path, target: CONTAINER_PATHS.workspace, readOnly: false },
    { source: ioDir, target: CONTAINER_PATHS.io, readOnly: false },
    ...ws.mounts(),
    ...(caches?.mounts ?? []),
  ];
  const company = c.spending.company;
  const ca = company?.ca?.hostPath ? company.ca : undefined;
  // the bundle where the variables point, and where the image's own tools look by default; on swarm it travels as files
  if (ca) for (const target of [CA_PATH, SYSTEM_BUNDLE_PATH]) mounts.push({ source: ca.hostPath!, target, readOnly: true });
  return {
    name: containerName(c),
    image: plan.image,
    cmd: rendered.cmd,
    // the step's own env: wins over the company network's (a step may name another registry, or its own bundle);
    // a cache's setting wins over both: the step asked for the cache
    env: { ...networkEnv(company), ...rendered.env, ...(caches?.env ?? {}) },
    ...(ca ? { files: [CA_PATH, SYSTEM_BUNDLE_PATH].map((target) => ({ target, data: ca.pem, secret: false })) } : {}),
    ...(Object.keys(rendered.secretEnv).length ? { secretEnv: rendered.secretEnv } : {}),
    workingDir: CONTAINER_PATHS.workspace,
    user: `${user.uid}:${user.gid}`,
    mounts,
    memoryBytes: plan.memoryBytes,
    cpus: plan.cpus,
    pids: plan.pids,
    openFiles: plan.openFiles,
    fileSizeBytes: plan.fileSizeBytes,
    readOnlyRoot: plan.readOnlyRoot,
    capAdd: plan.capAdd,
    network: way.network,
    ...(way.dns ? { dns: way.dns } : {}),
    ...(way.hosts ? { hosts: way.hosts } : {}),
    ...(way.up ? { holdUntil: way.up } : {}),
    ...(plan.placement ? { placement: plan.placement } : {}),
    labels: stepLabels(c),
    isolation: plan.isolation,
  };
}

function describeLimit(limit: ReturnType<typeof limitsHit>[number], plan: StepPlan): string {
  switch (limit) {
    case 'memory':
      return `oom: killed at its memory limit of ${formatSize(plan.memoryBytes)} (raise resources.memory)`;
    case 'timeout':
      return `timed out: stopped at its timeout of ${Math.round(plan.timeoutMs / 1000)}s (raise timeout)`;
    case 'pids':
      // under gVisor the runner sees the sandbox reach its cap (where the next fork is refused), not each refusal
      return plan.isolation === 'gvisor'
        ? `pids limit reached: the sandbox held ${plan.pids} processes, its cap, where forks are refused (raise resources.pids)`
        : `pids limit reached: forks were refused at ${plan.pids} processes (raise resources.pids)`;
    case 'file_size':
      return `file size limit reached: a write past ${formatSize(plan.fileSizeBytes)} was refused (raise resources.file_size)`;
  }
}
