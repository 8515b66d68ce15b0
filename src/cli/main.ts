#!/usr/bin/env node
/**
 * argv → a command. The only place that calls process.exit. Commands are
 * imported on demand (commands.ts) so `runner --help` loads no docker or logging library: in the runner's
 * bundle this module is the start (dist/runner/main.js) and the commands the bundle it loads (runner.cjs).
 */
import { readFile } from 'node:fs/promises';
import { CLOSED_PIPE_EXIT, pipeClosed, watchOutput } from './closed-pipe.js';
import { HELP, helpFor } from './help.js';

async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    process.stdout.write(HELP);
    return first === undefined ? 2 : 0;
  }
  if (first === '--version' || first === '-v') {
    const { packageRoot } = await import('../common/package-root.js');
    const pkg = JSON.parse(await readFile(`${packageRoot()}/package.json`, 'utf8')) as { version: string };
    process.stdout.write(`runner ${pkg.version}\n`);
    return 0;
  }
  const { COMMANDS } = await import('./commands.js');
  const load = COMMANDS[first];
  if (!load) {
    process.stderr.write(`runner: unknown command "${first}"; commands: ${Object.keys(COMMANDS).join(', ')} (runner --help)\n`);
    return 2;
  }
  // `runner CMD --help`: that command's part of the help, for the commands that take no --help of their own
  if (rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h')) {
    process.stdout.write(helpFor(first));
    return 0;
  }
  const command = await load();
  return command(rest);
}


// A closed pipe (runner runs ls | head -1) ends any command quietly, exit 141, as git (closed-pipe.ts).
watchOutput((code) => process.exit(code));

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = pipeClosed() ? CLOSED_PIPE_EXIT : code;
  },
  async (err: unknown) => {
    if (pipeClosed()) process.exit(CLOSED_PIPE_EXIT);
    const { exitCodeForError, visibleLines, visibleMessage } = await (await import('./commands.js')).errorTools();
    // An error may quote step-made text (a file name, git's words about it): its control characters shown, not
    // sent, and its lines after the first indented. Only the problems of a pipeline file or of inputs (the user's
    // own text) keep their lines as they are.
    const message = err instanceof Error ? err.message : String(err);
    const ownLines = err instanceof Error && ['pipeline_invalid', 'bad_input', 'usage'].includes((err as { code?: string }).code ?? '');
    process.stderr.write(`${ownLines ? `runner: ${visibleLines(message)}` : visibleMessage(message, 'runner: ')}\n`);
    if (process.env.RUNNER_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exit(exitCodeForError(err));
  },
);
