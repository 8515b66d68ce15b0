/**
 * One step of a run: let the workspace check itself and give itself to the
 * step's user, open the step's add-ons (step-addons/: caches, the company
 * network, its way out, the agent's events, the transport) and make its
 * container from their parts, run it, close them in reverse, read its outputs
 * and what the add-ons reported, and let the workspace record what the step
 * left (a commit, a patch, or a list of changes). It knows no add-on by name.
 */
import path from 'node:path';
import { ContainerError, errorMessage } from '../common/errors.js';
import { LineSplitter } from '../common/line-splitter.js';
import type { Masker } from '../common/mask.js';
import { mountTransport } from '../container/local/mount-transport.js';
import { LABELS, type ContainerSpec } from '../container/runtime.js';
import { execSizeProblem } from '../plan/exec-size.js';
import { CONTAINER_PATHS, renderStep, type RunIdentity } from '../plan/render.js';
import { resolveUser, type StepPlan } from '../plan/step-plan.js';
import { verifyDirectory } from '../workspace/names.js';
import { removeTree } from '../workspace/remove-tree.js';
import type { Workspace } from '../workspace/workspace.js';
import { laneName, type Unit } from '../flow/planner.js';
import { commitMessage } from './commit-message.js';
import type { ExecDeps } from './orchestrator.js';
import { parseOutputs, readOutputsFile } from './outputs.js';
import { describeLimit, describeStatus, limitsHit, type StepResult } from './step-result.js';
import { runContainer, type ContainerEnd } from './step-runner.js';
import type { RunSpending } from './step-network.js';
import type { RunStore } from './store.js';
import { StepRefused, type AddonEnd, type AddonReport, type AddonStep, type OpenAddon, type StepAddon } from './step-addons/addon.js';
import { stepAddons } from './step-addons/addons.js';
import { mergeReports, specWith, stepStatus } from './step-addons/compose.js';

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
  /** an agent step of the run (this start, an earlier one, or carried by a fork) that ran before this step: it may not write caches (src/cache/write-trust.ts) */
  agentBefore?: string;
  /** lines the step's log begins with (`runner: ` before each): what the run did to its workspace for it */
  notes?: string[];
  /** the workspace holds what earlier runs left (a task's worktree after its first run): it may not write caches either */
  earlierWork?: string;
  /** after the workspace's directory was replaced by the runner (a warm container took its place): the run's record says the new one */
  workspaceMoved?: () => Promise<void>;
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
  // what add-ons print as the step's output (an agent's events, rendered)
  const addonOut = lineTo('stdout');

  // Right before the container is made, the workspace checks itself (still the
  // directory the runner created, git links intact) and goes to the step's user.
  await ws.prepareStep(user);
  await verifyDirectory(ioDir);

  // an add-on stops the step (the run's budget spent while it runs, its way out lost): it said why in the log
  const stopped = new AbortController();
  const say = (line: string) => {
    const masked = masker.mask(line);
    log.line(masked);
    deps.reporter.stepLine(name, 'stderr', masked);
  };
  for (const note of c.notes ?? []) say(`runner: ${note}`);
  const step: AddonStep = {
    c,
    user,
    ioDir,
    name: containerName(c),
    labels: stepLabels(c),
    say,
    log: (line) => log.line(masker.mask(line)),
    stdout: (line) => addonOut.push(Buffer.from(`${line}\n`)),
    stop: () => stopped.abort(),
  };
  const opened: Array<{ addon: StepAddon; open: OpenAddon }> = [];
  try {
    for (const addon of stepAddons(deps.transport ?? mountTransport(deps.runtime))) {
      const open = await addon.open(step);
      opened.push({ addon, open });
      for (const note of open.notes ?? []) say(`runner: ${note}`);
    }
  } catch (e) {
    await closeAddons(opened, { reason: undefined }, deps.reporter);
    log.close();
    if (e instanceof StepRefused) return { result: await refuseStep(c, ioDir, e.code, e.message), outputs: {} };
    throw e;
  }

  let end: ContainerEnd | undefined;
  let notStarted: string | undefined;
  let reports: Array<AddonReport | undefined> = [];
  try {
    let { spec, way } = specWith(containerSpec(c, rendered, user, ioDir), opened.map((o) => o.open));
    for (const { open } of opened) if (open.reshape) spec = await open.reshape(spec, way);
    end = await runContainer(deps.runtime, spec, {
      timeoutMs: plan.timeoutMs,
      signal: AbortSignal.any([deps.signal, stopped.signal]),
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
  } catch (e) {
    // an image that cannot take the step's secrets out of the engine's sight: the step's, said before it runs
    // or whose way out did not come up (the step's log says why)
    if (!(e instanceof ContainerError && (e.code === 'no_shell' || e.code === 'way_failed'))) throw e;
    notStarted = errorMessage(e);
  } finally {
    out.end();
    err.end();
    // in reverse: the work comes back (another node) before the agent's last events are read, the agent's usage
    // before its gateway's sums replace it, the caches last
    reports = await closeAddons(opened, { reason: end?.reason }, deps.reporter);
    addonOut.end();
    for (const r of reports) for (const line of r?.logLines ?? []) log.line(masker.mask(line));
    log.close();
  }
  if (notStarted !== undefined || !end) return { result: await refuseStep(c, ioDir, 'step_not_started', `not started: ${notStarted ?? 'the container did not run'}`), outputs: {} };
  if (killedAtMemoryCap(plan.isolation, end)) end = { ...end, oomKilled: true };

  const reported = mergeReports(reports);
  const status = stepStatus(end, reported.said);
  const limits = limitsHit({ status, exitCode: end.exitCode, ...(end.pidsLimitHits !== undefined ? { pidsLimitHits: end.pidsLimitHits } : {}) });
  const limitText = limits.map((l) => describeLimit(l, plan));
  const messages = [...limitText, ...reported.problems];
  if (end.problem) messages.push(end.problem.message);

  const read = await readOutputsFile(path.join(ioDir, 'output'));
  // The raw files may hold secrets; only the masked values are kept, in run.json.
  await removeTree(ioDir);
  const parsed = read.text !== undefined ? parseOutputs(read.text) : { values: {}, problems: [] };
  if (read.problem) messages.push(read.problem);
  for (const p of parsed.problems) messages.push(`outputs: ${p}`);
  // what an add-on says the step gave (an agent's final message as its result) stands over its outputs file
  const kept = { ...Object.fromEntries(Object.entries(parsed.values).filter(([k]) => plan.outputs.includes(k) || k === 'summary')), ...reported.outputs };

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
    ...(reported.usage ? { usage: reported.usage } : {}),
    ...(reported.egress ? { egress: reported.egress } : {}),
    ...(plan.agent ? { agent: plan.agent } : {}),
    ...(reported.error ? { error: reported.error } : {}),
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

/** Closes the add-ons in reverse order, whatever happened; one that fails to close is the runner's warning, not the step's. */
async function closeAddons(opened: ReadonlyArray<{ addon: StepAddon; open: OpenAddon }>, end: AddonEnd, reporter: ExecDeps['reporter']): Promise<Array<AddonReport | undefined>> {
  const reports: Array<AddonReport | undefined> = [];
  let usage = end.usage;
  for (const { addon, open } of [...opened].reverse()) {
    const r = await open.close({ ...end, usage }).catch((e: unknown) => {
      reporter.warn(`closing the step's ${addon.name}: ${errorMessage(e)}`);
      return undefined;
    });
    if (r?.usage) usage = r.usage;
    reports.push(r);
  }
  return reports;
}

/** The step's own container, before its add-ons add their parts: its workspace and io mounted, its plan's network, its own env. */
function containerSpec(c: StepContext, rendered: { cmd: string[]; env: Record<string, string>; secretEnv: Record<string, string> }, user: { uid: number; gid: number }, ioDir: string): ContainerSpec {
  const { plan, ws } = c;
  return {
    name: containerName(c),
    image: plan.image,
    cmd: rendered.cmd,
    env: rendered.env,
    ...(Object.keys(rendered.secretEnv).length ? { secretEnv: rendered.secretEnv } : {}),
    workingDir: CONTAINER_PATHS.workspace,
    user: `${user.uid}:${user.gid}`,
    mounts: [{ source: ws.path, target: CONTAINER_PATHS.workspace, readOnly: false }, { source: ioDir, target: CONTAINER_PATHS.io, readOnly: false }, ...ws.mounts()],
    memoryBytes: plan.memoryBytes,
    cpus: plan.cpus,
    pids: plan.pids,
    openFiles: plan.openFiles,
    fileSizeBytes: plan.fileSizeBytes,
    readOnlyRoot: plan.readOnlyRoot,
    capAdd: plan.capAdd,
    network: plan.network,
    ...(plan.placement ? { placement: plan.placement } : {}),
    labels: stepLabels(c),
    isolation: plan.isolation,
  };
}

/**
 * Under gVisor a step at its memory cap is not always ended by the host's OOM killer, whose event is the engine's
 * only sign of it: the sandbox's own kernel kills the process that cannot get memory (SIGKILL, exit 137) and the
 * engine says no OOM. Seen in 2 of 3 clean-clone CI runs on a loaded machine (the memory steps of gvisor.test and
 * gvisor-attacks: `failed, exit 137`). So under gVisor a SIGKILL the runner did not send (not a timeout, not a
 * cancel) is taken as the memory cap; a step that SIGKILLs its own main process there is misreported as oom
 * (docs/gvisor.md says so). The same on an engine that never reports the kill (Podman on cgroup v1: docs/podman.md).
 */
export function killedAtMemoryCap(isolation: string | undefined, end: { reason: string; exitCode: number | null; oomKilled: boolean; oomUnreported?: boolean }): boolean {
  return (isolation === 'gvisor' || end.oomUnreported === true) && end.reason === 'exit' && end.exitCode === 137 && !end.oomKilled;
}
