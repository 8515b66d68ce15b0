/** A starter pipeline for a project, as YAML text with comments. Pure. */
import { parse } from 'yaml';
import { visible } from '../common/visible.js';
import type { Detected } from './detect.js';
import { VERIFY_IMAGE, VERIFY_TIMEOUT, type TrialVerdict } from './trial.js';

export interface StarterFacts {
  name: string;
  /** the project's folder as the file names it (relative to where the file is) */
  projectPath?: string;
  /** the file's name, for the comment that says how to run it */
  fileName?: string;
  agent: 'claude-code' | 'codex';
  git: boolean;
  detected: Detected;
  /** what trying the checks on the base said (trial.ts), or why they were not tried */
  trial?: TrialVerdict | { notTried: string };
  /** the pipeline schema takes `image: devcontainer` (devcontainer-image.ts): proposed when the project has one */
  devcontainerImage?: boolean;
}

const CREDENTIAL = { 'claude-code': 'ANTHROPIC_API_KEY', codex: 'OPENAI_API_KEY' } as const;
/** what the starter's task is when none is given: a file the user commits */
export const DEFAULT_TASK = 'Do what TASK.md asks.';

export function starterPipeline(f: StarterFacts): string {
  const d = f.detected;
  const trial = f.trial && 'leftOut' in f.trial ? f.trial : undefined;
  const leftOut = trial?.leftOut ?? [];
  const kept = (c: string | undefined) => c !== undefined && !leftOut.some((l) => l.check.command === c);
  const verify = [d.install, d.test, d.lint].filter((c): c is string => kept(c));
  const devcontainer = d.devcontainer && f.devcontainerImage ? d.devcontainer : undefined;
  const egress = d.registries?.length ? `[${d.registries.join(', ')}]` : undefined;
  const lines = [
    `version: 1`,
    `name: ${plainOrQuoted(f.name)}`,
    `description: An agent does the task it is given${verify.length ? '; the project\'s own checks decide' : ''}.`,
    ``,
    `# Made by runner init. Found: ${d.ecosystem} (${d.evidence}).`,
    `# Run it: runner exec ${f.fileName ?? 'runner.yaml'} --input task="Fix the failing test in ..."`,
    `# Steps trust this machine's CA bundle (behind a TLS-inspecting proxy too); --ca-file F names another, --ca-file none trusts none`,
    `project:`,
    `  path: ${JSON.stringify(f.projectPath ?? '.')}`,
    ...(f.git
      ? [`  push: never                      # runs stay local (runner push RUN); auto: push each run's branch when the project has a remote`]
      : [`  workspace: persistent_directory   # not a git repository: the folder itself is worked on`]),
    ``,
    `inputs:`,
    `  task:`,
    `    description: ${JSON.stringify('What the agent is to do. A run sees committed files only: commit a TASK.md for the default to find it.')}`,
    `    default: ${JSON.stringify(DEFAULT_TASK)}`,
    ``,
    ...(d.cache || devcontainer
      ? [
          `defaults:`,
          ...(devcontainer ? [`  image: devcontainer               # the project's ${devcontainer}: steps and agents run in its environment`] : []),
          ...(d.cache ? [`  cache: [${d.cache}]                  # the project's ${d.cache} cache, kept in the runner home for the next run (runner cache ls)`] : []),
          ``,
        ]
      : []),
    ...(d.devcontainer && !devcontainer ? [`# Found ${d.devcontainer}: this runner does not run steps in a dev container yet (image: devcontainer); they use its own images.`, ``] : []),
    `secrets: [${CREDENTIAL[f.agent]}]   # from the environment or --secrets-file`,
    ``,
    `agents:`,
    `  coder:`,
    `    use: ${f.agent}`,
    // no model named for Codex: its own default is one it knows (a name it does not know costs an error line each run)
    ...(f.agent === 'codex' ? [`    # model: ...                   # Codex's own default when unset`] : [`    max_turns: 40`]),
    ...(egress && d.test ? [`    egress: ${egress}   # the tests it runs install packages`] : []),
    ``,
    `steps:`,
    `  - id: implement`,
    `    agent: coder`,
    `    timeout: 30m`,
    `    prompt: |`,
    `      \${{ inputs.task }}`,
    ``,
    `      Work in this ${f.git ? 'repository' : 'folder'}.${d.test ? ` Run the tests (${[d.install, d.test].filter(Boolean).join(' && ')}) before you finish.` : ''}`,
    `      End with one line that says what you changed.`,
  ];
  if (verify.length) {
    lines.push(
      ``,
      ...(f.trial && 'notTried' in f.trial ? [`  # The checks were not tried on the project (${oneLine(f.trial.notTried)}).`] : []),
      ...(trial?.notes ?? []).map((n) => `  # ${oneLine(n)}`),
      `  - id: verify`,
      ...(devcontainer ? [] : [`    image: ${VERIFY_IMAGE}`]),
      ...(egress ? [`    egress: ${egress}   # through a gateway that allows only these`] : []),
      `    timeout: ${VERIFY_TIMEOUT}`,
      `    run: |`,
      ...verify.map((c) => `      ${c}`),
      // left out, said in the script itself (shell comments): put the line back once it passes
      ...leftOut.flatMap((l) => [`      # ${oneLine(l.comment)}`, `      # ${l.check.command}`]),
      `    verify: true                     # runner apply / merge refuse the run unless this passed`,
    );
  } else {
    lines.push(``, `# No test command was found: add a step that checks the work, with verify: true.`);
  }
  return `${lines.join('\n')}\n`;
}

/** A text as one comment line: what a command printed may hold anything. */
function oneLine(s: string): string {
  // C0 and C1 controls and the Unicode line and paragraph separators (line breaks to some YAML readers), and a bound:
  // an engine's or a registry's whole answer does not become one comment line of 2 KB; bidi controls and a lone
  // surrogate made visible (visible.ts)
  const line = visible(s.replace(/[\x00-\x1f\x7f-\x9f\u2028\u2029]+/g, ' ')).trim();
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}

/** A name as YAML reads it back as that text: a folder called `true`, `null` or `123` is quoted (else the starter does not load). */
function plainOrQuoted(name: string): string {
  let back: unknown;
  try {
    back = parse(name);
  } catch {
    back = undefined;
  }
  return back === name ? name : JSON.stringify(name);
}
