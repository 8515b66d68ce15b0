/**
 * The trial of the checks a starter proposes: the pipeline that runs them
 * once on the project's current commit (one step, the starter's verify step as
 * it would run: its image, egress, cache and timeout; the install, then each
 * check, their exits and output kept as the step's outputs), and what init
 * makes of its outcome. Pure: try-checks.ts runs it.
 */
import { shellWord } from '../common/shell-word.js';
import { visible } from '../common/visible.js';
import type { Detected } from './detect.js';

export const TRIAL_PIPELINE = 'init-trial';
export const TRIAL_STEP = 'try';
/** the image the starter's verify step names, and the trial runs in */
export const VERIFY_IMAGE = 'runner/toolchain:latest';
export const VERIFY_TIMEOUT = '20m';

export type CheckName = 'test' | 'lint';

export interface Check {
  name: CheckName;
  command: string;
}

/** The checks of a verify step, in the order it runs them. */
export function checksOf(d: Detected): Check[] {
  return [...(d.test ? [{ name: 'test' as const, command: d.test }] : []), ...(d.lint ? [{ name: 'lint' as const, command: d.lint }] : [])];
}

/** How one command ended in the trial: its exit, and the line of its output that says most. */
export interface Tried {
  command: string;
  exitCode: number;
  line: string;
}

export interface TrialOutcome {
  /** the commit the checks ran on */
  commit: string;
  runId: string;
  install?: Tried;
  checks: Partial<Record<CheckName, Tried>>;
}

/** What the starter makes of a trial: each check kept or left out, and why, for its comments. */
export interface TrialVerdict {
  /** the checks left out of the verify step, with the comment that says why */
  leftOut: Array<{ check: Check; comment: string }>;
  /** comments on checks kept though they failed, or on a trial that could not judge them */
  notes: string[];
}


/** How much of a command's output the step keeps, from its start and from its end. */
const KEPT_LINES = 40;
/** How much of each kept line: what the starter takes of it is 160 characters (tellingLine); three commands' worth stays far under the outputs file's bound. */
const KEPT_LINE_BYTES = 2000;

/**
 * The trial step's script: `set +e`, the install, then each check, each one's
 * exit and the head and tail of its output written to $RUNNER_OUTPUT; a failed
 * install stops it (the checks cannot be judged then). Whatever the commands
 * left in the worktree is cleaned away at the end, so the step commits nothing.
 */
export function trialScript(d: Detected): string {
  const run = (key: string, label: string, command: string) => {
    const exit = `/tmp/runner-init.${key}.exit`;
    const out = `/tmp/runner-init.${key}.out`;
    return [
      `echo ${shellWord(`runner init: ${label}: ${command}`)}`,
      // In a subshell of its own (a command that exits ends only it), its output shown as it comes through tee. The
      // command's end is its exit file, not the end of tee: a process it left in the background (a server its tests
      // started) holds the pipe open, and waiting for tee waited for it, up to the step's timeout, where the verify
      // this trial stands for ends with its script. tee is given a moment for the last lines, then left to the end.
      `rm -f ${exit} ${exit}.w; { { ( ${command}\n); echo $? > ${exit}.w; mv ${exit}.w ${exit}; } 2>&1 | tee ${out}; } &`,
      `teeing=$!; while [ ! -f ${exit} ] && kill -0 $teeing 2>/dev/null; do sleep 0.1 2>/dev/null || sleep 1; done`,
      `n=0; while kill -0 $teeing 2>/dev/null && [ $n -lt 20 ]; do sleep 0.1 2>/dev/null || sleep 1; n=$((n+1)); done`,
      `code=$(cat ${exit} 2>/dev/null || echo 255)`,
      `echo "${key}_exit=$code" >> "$RUNNER_OUTPUT"`,
      // each kept line cut: one line of megabytes (a minified bundle in a stack trace) filled the outputs file past its
      // bound, and the checks after it were not judged
      `{ echo '${key}_output<<RUNNER_INIT_EOF'; head -n ${KEPT_LINES} ${out} | cut -c1-${KEPT_LINE_BYTES}; echo '...'; tail -n ${KEPT_LINES} ${out} | cut -c1-${KEPT_LINE_BYTES}; echo RUNNER_INIT_EOF; } >> "$RUNNER_OUTPUT"`,
    ];
  };
  const lines = ['set +e'];
  if (d.install) lines.push(...run('install', 'installing', d.install), `if [ "$code" != 0 ]; then echo 'runner init: the install failed: the checks are not tried'; exit 0; fi`);
  for (const c of checksOf(d)) lines.push(...run(c.name, `trying the ${c.name}`, c.command), `echo "runner init: the ${c.name} ended with exit $code"`);
  // nothing of the trial is kept: the step's commit is empty. Except, with the npm cache, a node_modules that git
  // ignores (so in no commit): left for the runner, which keeps the tree the install made in the installed-tree cache,
  // restored by the runs' next npm ci of the same lockfile (docs/pipeline-format.md#the-installed-tree-npm). The trial
  // is a step before any agent, on the project's own commit: one the runner trusts to write caches
  const keep = d.cache === 'npm' ? `if git check-ignore -q node_modules/ 2>/dev/null; then git clean -fdxq -e /node_modules; else git clean -fdxq; fi` : 'git clean -fdxq';
  lines.push(`${keep} >/dev/null 2>&1; git checkout -q -- . >/dev/null 2>&1; true`);
  return `${lines.join('\n')}\n`;
}

/**
 * The trial as a pipeline (an object the pipeline parser takes): one step on the project's current commit, pushed
 * nowhere, in the image the starter's verify step will name (the project's dev container when it proposes one).
 */
export function trialPipeline(d: Detected, o: { devcontainer?: boolean } = {}): Record<string, unknown> {
  const egress = d.registries?.length ? d.registries : undefined;
  return {
    version: 1,
    name: TRIAL_PIPELINE,
    description: 'runner init tries the checks it proposes on the project as it is committed',
    project: { path: '.', push: 'never' },
    steps: [
      {
        id: TRIAL_STEP,
        image: o.devcontainer ? 'devcontainer' : VERIFY_IMAGE,
        ...(egress ? { egress } : {}),
        ...(d.cache ? { cache: [d.cache] } : {}),
        timeout: VERIFY_TIMEOUT,
        run: trialScript(d),
        outputs: ['install_exit', 'install_output', ...checksOf(d).flatMap((c) => [`${c.name}_exit`, `${c.name}_output`])],
      },
    ],
  };
}

/** The trial's outcome from its step's outputs; undefined for a command that did not run. Pure. */
export function readTrial(d: Detected, o: { commit: string; runId: string; outputs: Record<string, string> }): TrialOutcome {
  const tried = (key: string, command: string): Tried | undefined => {
    const exit = o.outputs[`${key}_exit`];
    if (exit === undefined || !/^\d+$/.test(exit.trim())) return undefined;
    return { command, exitCode: Number(exit.trim()), line: tellingLine(o.outputs[`${key}_output`] ?? '') };
  };
  const install = d.install ? tried('install', d.install) : undefined;
  const checks: TrialOutcome['checks'] = {};
  for (const c of checksOf(d)) {
    const t = tried(c.name, c.command);
    if (t) checks[c.name] = t;
  }
  return { commit: o.commit, runId: o.runId, ...(install ? { install } : {}), checks };
}

const ERROR_LINE = /\b(error|ERR!|fail(ed|ure)?|FAIL|not found|no such|missing|cannot|can't|unable|exception|traceback)\b/i;

/** The line of a command's output that says most of why it failed: the first that reads as an error, else the last. Pure. */
export function tellingLine(output: string): string {
  const lines = output
    .split('\n')
    // C0 controls become spaces; what else may start a line or reorder one to a reader of the starter (C1 controls
    // with NEL, U+2028, U+2029, the bidi controls) is made visible: the line lands in the starter's comments
    .map((l) => visible(l.replace(/\x1b\[[0-9;]*m/g, '').replace(/[\x00-\x1f\x7f]/g, ' ')).trim())
    .filter((l) => l !== '' && l !== '...');
  const line = lines.find((l) => ERROR_LINE.test(l)) ?? lines[lines.length - 1] ?? '(no output)';
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}

/**
 * What the starter keeps. A check that failed on the base is left out, with a
 * comment that says so: a verify that fails before any change makes every run
 * red. The test command is the exception: a failing test is often the very
 * task, and a verify without it checks nothing; it stays, with a note (a
 * failed verify says whether it failed on the base too). A failed install
 * judges nothing: every check stays, with a note saying why (often the
 * network: a proxy's CA, a registry).
 */
export function judgeTrial(d: Detected, t: TrialOutcome, o: { home?: string } = {}): TrialVerdict {
  const short = t.commit.slice(0, 10);
  // the trial's run is in init's home: one named by --home is named in the command too
  const logs = `runner logs ${t.runId} --step ${TRIAL_STEP}${o.home ? ` --home ${shellWord(o.home)}` : ''}`;
  if (d.install && (t.install === undefined || t.install.exitCode !== 0)) {
    const why = t.install ? `failed (exit ${t.install.exitCode}): ${t.install.line}` : 'did not end';
    return { leftOut: [], notes: [`the install failed on the base commit ${short}, so the checks could not be tried; all kept (${logs}): ${why}`] };
  }
  const leftOut: TrialVerdict['leftOut'] = [];
  const notes: string[] = [];
  for (const c of checksOf(d)) {
    const r = t.checks[c.name];
    if (!r) {
      notes.push(`${c.command} was not tried (${logs}); kept`);
      continue;
    }
    if (r.exitCode === 0) continue;
    const why = `${c.command} failed on the base commit ${short} (exit ${r.exitCode}): ${r.line}`;
    if (c.name === 'test') notes.push(`${why}; kept: the tests are what the verify checks (make them pass, or the task may be to) (${logs})`);
    else leftOut.push({ check: c, comment: `${why}; left out (${logs})` });
  }
  return { leftOut, notes };
}
