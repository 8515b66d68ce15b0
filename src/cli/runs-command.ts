/** `runner runs ls|show|prune` */
import { visible } from '../common/visible.js';
import { rm } from 'node:fs/promises';
import { formatDuration, parseDuration } from '../common/durations.js';
import { UsageError } from '../common/errors.js';
import { Git } from '../git/git.js';
import { runListing, type RunRecord, type StartedBy } from '../run/record.js';
import { resultName, type StepResult } from '../run/step-result.js';
import { ranTogether } from '../run/together.js';
import { listRuns, runDir } from '../run/records.js';
import { cliDoor } from '../runs/door.js';
import { listRunsOf } from '../runs/list.js';
import { showRecord } from '../runs/show.js';
import { inspectProject } from '../workspace/project.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';
import { describeUsage } from '../agents/usage.js';
import { changeLines } from './change-lines.js';
import { printTable } from './table.js';
import { describeDecider } from '../run/gate.js';
import { describeWarm, readWarmStatuses, warmDir } from '../gateway/host/warm-status.js';

async function dropSavedRefs(projectDir: string, runId: string): Promise<void> {
  const project = await inspectProject((who) => new Git(who), projectDir);
  const git = new Git({ uid: project.uid, gid: project.gid });
  const call = { cwd: project.root, gitDir: project.commonDir };
  const refs = (await git.out(['for-each-ref', '--format=%(refname)', `refs/runner/saved/${runId}/`], call)).split('\n').filter(Boolean);
  for (const ref of refs) await git.run(['update-ref', '-d', ref], { ...call, allowFail: true });
}

export async function runsCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'ls' || sub === undefined) return runsLs(rest);
  if (sub === 'show') return runsShow(rest);
  if (sub === 'prune') return runsPrune(rest);
  throw new UsageError(`runs: expected ls, show or prune, got ${sub} (runner --help)`);
}

async function runsLs(args: string[]): Promise<number> {
  const { values } = parseFlags(
    'runs ls',
    args,
    { pipeline: { type: 'string' }, status: { type: 'string' }, json: { type: 'boolean', default: false }, home: { type: 'string' } },
    [],
  );
  const home = await openHome(values.home);
  const runs = (await listRunsOf(cliDoor(home), { pipeline: values.pipeline ?? null, status: values.status ?? null, whole: true })).filter((r) => 'steps' in r);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(runs.map(runListing))}\n`);
    return 0;
  }
  // what runners of this home keep warm (runner serve/exec --warm N): said below the runs
  const warm = describeWarm(await readWarmStatuses(warmDir(home.root)));
  if (runs.length === 0) {
    process.stdout.write(`no runs\n${warm ? `${visible(warm)}\n` : ''}`);
    return 0;
  }
  printTable([
    ['RUN', 'PIPELINE', 'STATUS', 'STARTED', 'DURATION', 'BRANCH'],
    ...runs.map((r) => [
      r.runId,
      r.pipeline,
      r.status,
      r.startedAt.replace('T', ' ').slice(0, 19),
      r.durationMs !== null ? formatDuration(r.durationMs) : '-',
      r.branch ?? (r.workspace === 'persistent_directory' ? `(${r.project})` : '-'),
    ]),
  ]);
  if (warm) process.stdout.write(`${visible(warm)}\n`);
  return 0;
}

async function runsShow(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('runs show', args, { json: { type: 'boolean', default: false }, home: { type: 'string' } }, ['RUN_ID']);
  const home = await openHome(values.home);
  const r = await showRecord(cliDoor(home), positionals[0]!);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
    return 0;
  }
  const together = ranTogether(r.steps);
  // which sandbox each step ran in, on every line once one of them ran under gVisor; a step whose record does not say (skipped, refused) is not said to be under runc
  const sandboxed = r.steps.some((s) => s.isolation === 'gvisor');
  const lines = [
    `run        ${r.runId}`,
    `pipeline   ${r.pipeline} (${r.pipelineFile})`,
    `status     ${r.status}${r.error ? `: ${r.error.message}` : ''}`,
    ...(r.inputs && Object.keys(r.inputs).length ? [`inputs     ${Object.entries(r.inputs).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(' ')}`] : []),
    `project    ${r.project} (${r.workspace}${r.taskId ? `, task ${r.taskId}` : ''})`,
    ...(r.branch ? [`branch     ${r.branch}  ${r.baseSha?.slice(0, 10)}..${r.headSha?.slice(0, 10) ?? '?'}${r.pushed ? `  pushed to ${r.push?.remote}` : ''}`] : []),
    r.status === 'queued' || r.status === 'not_started'
      ? `asked for  ${r.startedAt}${r.requestedBy ? ` (${r.requestedBy})` : ''}`
      : `started    ${r.startedAt}${r.durationMs !== null ? `  (${formatDuration(r.durationMs)})` : ''}`,
    ...(r.startedBy ? [`started by ${describeStarter(r.startedBy)}`] : []),
    ...(r.forkOf ? [`fork of    ${r.forkOf.runId} from step ${r.forkOf.step} (at ${r.forkOf.commit.slice(0, 10)})`] : []),
    ...(r.attempts && r.attempts.length > 1 ? r.attempts.map((a) => `${a.n === 1 ? 'attempts   ' : '           '}${a.n}. ${a.how}${a.from ? ` from ${a.from}` : ''} at ${a.startedAt}${a.status ? `: ${a.status}` : ''}`) : []),
    ...(r.gate
      ? [
          `waits at   ${r.gate.name}: ${r.gate.prompt}`,
          `           until ${r.gate.deadline}; decide: runner approve ${r.runId} [--comment TEXT] or runner reject ${r.runId}`,
        ]
      : []),
    ...(r.decisions ?? []).map((d) => `decision   ${d.step} ${d.decision} by ${describeDecider(d.by)} at ${d.at}${d.comment ? `: ${d.comment}` : ''}`),
    ...(r.delivered ? [`delivered  ${r.delivered.how}${r.delivered.into ? ` into ${r.delivered.into}` : ''} at ${r.delivered.at}`] : []),
    'steps',
    ...r.steps.flatMap((s, i) => [
      `  ${resultName(s).padEnd(16)} ${s.status.padEnd(11)} ${s.exitCode ?? '-'}`.padEnd(34) +
        ` ${formatDuration(s.durationMs).padStart(7)}  ${s.commit?.slice(0, 10) ?? ''}${sandboxed && s.isolation ? `  under ${s.isolation}` : ''}${s.node ? `  on node ${s.node}` : ''}${s.carried ? `  (done in run ${s.carried.from}, not run again)` : ''}${s.limits?.length ? `  limits: ${s.limits.join(', ')}` : ''}${s.message ? `  ${s.message}` : ''}`,
      // an agent step: what it said at the end, and what it used
      ...finalMessage(s).map((l) => `  ${''.padEnd(16)} ${l}`),
      ...(s.usage ? [`  ${''.padEnd(16)} ${describeUsage(s.usage)}`] : []),
      // behind a gateway: the hosts it was refused
      ...(s.egress?.refused.length ? [`  ${''.padEnd(16)} egress refused: ${describeRefused(s.egress)}`] : []),
      // an inspecting gateway: requests its rules refused, and requests stopped for carrying a secret (by name)
      ...(s.egress?.rules?.length ? [`  ${''.padEnd(16)} rules refused: ${describeCounts(s.egress.rules.map((r) => ({ name: r.rule, count: r.count })))}`] : []),
      ...(s.egress?.secrets?.length ? [`  ${''.padEnd(16)} secrets stopped: ${describeCounts(s.egress.secrets.map((r) => ({ name: r.secret, count: r.count })))}`] : []),
      ...flowNotes(s, together[i]!).map((n) => `  ${''.padEnd(16)} ${n}`),
    ]),
    ...flowLines(r),
    // A persistent directory has no diff: what each step added, modified and deleted.
    ...(r.workspace === 'persistent_directory' && r.steps.some((s) => s.changes) ? ['changes', ...r.steps.flatMap((s) => (s.changes ? changeLines(resultName(s), s.changes, '  ') : []))] : []),
  ];
  // Messages, outputs and errors carry step-made text: one line each, control characters shown.
  process.stdout.write(`${lines.map(visible).join('\n')}\n`);
  return 0;
}

/** `dashboard (from 127.0.0.1)`, `rerun of 20261122-061500-k3f9a2`, `schedule 0 3 * * *`, `cli (alice)`. */
function describeStarter(b: StartedBy): string {
  const who = b.via === 'rerun' ? `rerun of ${b.rerunOf ?? '?'}` : b.via === 'schedule' && b.schedule ? `schedule ${b.schedule}` : b.via;
  const extra = [b.user, b.from ? `from ${b.from}` : undefined].filter(Boolean);
  return extra.length ? `${who} (${extra.join(', ')})` : who;
}

/** What the flow did with one run of a step: its item, its retry, its lane and merge, what ran with it. */
function flowNotes(s: StepResult, together: string[]): string[] {
  const notes: string[] = [];
  if (s.item) notes.push(`item ${s.item.index}: ${JSON.stringify(s.item.value)}`);
  if (s.retryInMs !== undefined) notes.push(`runs again after ${formatDuration(s.retryInMs)}`);
  if (s.lane) {
    const merge = s.lane.merge === 'conflict' ? `conflict in ${(s.lane.files ?? []).join(', ')}` : s.lane.merge.replace('_', ' ');
    notes.push(`on ${s.lane.branch ?? 'the shared workspace'}: ${merge}${s.lane.commit ? ` (${s.lane.commit.slice(0, 10)})` : ''}`);
  }
  if (together.length) notes.push(`ran with ${together.join(', ')}`);
  return notes;
}

/** The routes taken, what stopped the run, the lane branches kept. */
function flowLines(r: RunRecord): string[] {
  const f = r.flow;
  if (!f || (!f.routes.length && !f.stop && !f.keptBranches.length)) return [];
  return [
    'flow',
    ...f.routes.map((x) => `  ${x.from} → ${x.to} (${x.output}=${x.value}), visit ${x.visit}`),
    ...(f.stop ? [`  stopped: ${f.stop.code}${f.stop.visits !== undefined ? ` (${f.stop.step}, ${f.stop.visits} visits)` : ''}${f.stop.files?.length ? ` (${f.stop.files.join(', ')})` : ''}`] : []),
    ...(f.keptBranches.length ? [`  kept branches: ${f.keptBranches.join(', ')}`] : []),
  ];
}

async function runsPrune(args: string[]): Promise<number> {
  const { values } = parseFlags(
    'runs prune',
    args,
    {
      'older-than': { type: 'string' },
      branches: { type: 'boolean', default: false },
      yes: { type: 'boolean', default: false },
      home: { type: 'string' },
    },
    [],
  );
  const given = values['older-than'];
  if (given === undefined) throw new UsageError('runs prune: --older-than is required, like 30d (runner --help)');
  const age = parseDuration(given);
  if (age === undefined) {
    throw new UsageError(
      /^\d+$/.test(given)
        ? `runs prune: --older-than ${given} has no unit: say ${given}d for days (or h, m, s)`
        : `runs prune: --older-than takes a duration like 30d, 12h or 90m, got "${given}"`,
    );
  }
  const home = await openHome(values.home);
  const cutoff = Date.now() - age;
  // A running run, or one a server holds queued, is never pruned.
  const old = (await listRuns(home.runs)).filter((r) => r.status !== 'running' && r.status !== 'queued' && Date.parse(r.startedAt) < cutoff);
  const branches = values.branches ? old.filter((r) => r.branch?.startsWith('run/') && !r.delivered) : [];
  if (old.length === 0) {
    process.stdout.write(`no runs older than ${values['older-than']}\n`);
    return 0;
  }
  process.stdout.write(
    `${old.length} run record(s) older than ${values['older-than']}` +
      (values.branches ? `, and ${branches.length} run branch(es) never delivered` : '') +
      ` would be removed\n`,
  );
  if (!values.yes) {
    printTable([
      ['RUN', 'PIPELINE', 'STATUS', 'STARTED', 'BRANCH'],
      ...old.map((r) => [r.runId, r.pipeline, r.status, r.startedAt.replace('T', ' ').slice(0, 19), branches.includes(r) ? `${r.branch} (removed)` : (r.branch ?? '-')]),
    ]);
    process.stdout.write('nothing removed: run again with --yes to remove them\n');
    return 0;
  }
  for (const r of branches) {
    try {
      const project = await inspectProject((who) => new Git(who), r.project);
      const git = new Git({ uid: project.uid, gid: project.gid });
      for (const b of [r.branch!, ...(r.flow?.keptBranches ?? [])]) {
        await git.run(['branch', '-D', '--', b], { cwd: project.root, gitDir: project.commonDir, allowFail: true });
      }
    } catch (err) {
      process.stderr.write(`runner: branch ${r.branch} of run ${r.runId} kept: ${visible((err as Error).message)}\n`);
    }
  }
  for (const r of old) {
    // Work a step could not commit is kept under refs/runner/saved/<run>/ while its record names it: it goes with the record.
    if (r.steps.some((s) => s.patch)) await dropSavedRefs(r.project, r.runId).catch(() => undefined);
    await rm(runDir(home.runs, r.runId), { recursive: true, force: true });
  }
  process.stdout.write(`removed ${old.length} run record(s)${values.branches ? ` and ${branches.length} branch(es)` : ''}\n`);
  return 0;
}

/** `denied.example ×3, 10.0.0.1 ×1`: the hosts a step's gateway refused it, most first. */
export function describeRefused(e: NonNullable<StepResult['egress']>): string {
  const shown = e.refused.slice(0, 8).map((r) => `${r.host} ×${r.count}`);
  const hidden = e.refused.length - shown.length;
  const others = e.others ? `, and ${e.others} more refusal(s) of other hosts` : '';
  return `${shown.join(', ')}${hidden > 0 ? `, and ${hidden} more host(s) (runner logs --step)` : ''}${others}`;
}

/** `{ host: api.github.com, methods: [GET] } ×2, …`: rules or secrets that refused a step's requests, most first. */
export function describeCounts(counts: ReadonlyArray<{ name: string; count: number }>): string {
  const shown = counts.slice(0, 8).map((r) => `${r.name} ×${r.count}`);
  const hidden = counts.length - shown.length;
  return `${shown.join(', ')}${hidden > 0 ? `, and ${hidden} more (runner logs --step)` : ''}`;
}

/** An agent step's final message, its first lines (the rest counted): what `runs show` says it said. */
export function finalMessage(s: Pick<StepResult, 'agent' | 'outputs'>, max = 4): string[] {
  const text = s.agent ? s.outputs?.result : undefined;
  if (!text?.trim()) return [];
  const lines = text.trim().split('\n').filter((l) => l.trim());
  const cut = (l: string) => (l.length > 200 ? `${l.slice(0, 199)}…` : l);
  return [`said: ${cut(lines[0]!)}`, ...lines.slice(1, max).map((l) => `      ${cut(l)}`), ...(lines.length > max ? [`      … (${lines.length - max} more lines: runs show --json)`] : [])];
}
