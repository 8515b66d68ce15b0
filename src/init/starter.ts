/** A starter pipeline for a project, as YAML text with comments. Pure. */
import type { Detected } from './detect.js';

export interface StarterFacts {
  name: string;
  agent: 'claude-code' | 'codex';
  git: boolean;
  detected: Detected;
}

const CREDENTIAL = { 'claude-code': 'ANTHROPIC_API_KEY', codex: 'OPENAI_API_KEY' } as const;

export function starterPipeline(f: StarterFacts): string {
  const d = f.detected;
  const verify = [d.install, d.test, d.lint].filter((c): c is string => c !== undefined);
  const lines = [
    `version: 1`,
    `name: ${f.name}`,
    `description: An agent does what TASK.md asks${verify.length ? '; the project\'s own checks decide' : ''}.`,
    ``,
    `# Made by runner init. Found: ${d.ecosystem} (${d.evidence}).`,
    `project:`,
    `  path: .`,
    ...(f.git ? [] : [`  workspace: persistent_directory   # not a git repository: the folder itself is worked on`]),
    ``,
    `secrets: [${CREDENTIAL[f.agent]}]   # from the environment or --secrets-file`,
    ``,
    `agents:`,
    `  coder:`,
    `    use: ${f.agent}`,
    ...(f.agent === 'codex' ? [`    model: gpt-5-codex`] : [`    max_turns: 40`]),
    ``,
    `steps:`,
    `  - id: implement`,
    `    agent: coder`,
    `    timeout: 30m`,
    `    prompt: |`,
    `      Do what TASK.md asks, in this ${f.git ? 'repository' : 'folder'}.${d.test ? ` Run the tests (${d.test}) before you finish.` : ''}`,
    `      End with one line that says what you changed.`,
  ];
  if (verify.length) {
    lines.push(
      ``,
      `  - id: verify`,
      `    image: runner/toolchain:latest`,
      `    network: bridge                  # the install fetches packages`,
      `    timeout: 20m`,
      `    run: |`,
      ...verify.map((c) => `      ${c}`),
      `    verify: true                     # runner apply / merge refuse the run unless this passed`,
    );
  } else {
    lines.push(``, `# No test command was found: add a step that checks the work, with verify: true.`);
  }
  return `${lines.join('\n')}\n`;
}
