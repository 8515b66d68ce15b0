/**
 * `runner init [DIR] [--agent claude-code|codex] [--file NAME]`: looks at the
 * project and writes a starter pipeline (an agent step, and a verify step with
 * the project's own install and test commands in runner/toolchain). It never
 * overwrites a file.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from '../common/errors.js';
import { detect, TEST_REQUIREMENT_FILES } from '../init/detect.js';
import { starterPipeline } from '../init/starter.js';
import { safeName } from '../workspace/names.js';
import { parseFlags } from './args.js';

export async function initCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('init', args, { agent: { type: 'string', default: 'claude-code' }, file: { type: 'string', default: 'runner.yaml' } }, 'any');
  if (positionals.length > 1) throw new UsageError('init: expected at most one DIR (runner --help)');
  const agent = values.agent;
  if (agent !== 'claude-code' && agent !== 'codex') throw new UsageError(`init: --agent takes claude-code or codex, got "${agent}"`);
  const dir = path.resolve(positionals[0] ?? '.');
  if (!(await stat(dir).catch(() => undefined))?.isDirectory()) throw new UsageError(`init: ${dir} is not a directory`);
  const target = path.resolve(dir, values.file ?? 'runner.yaml');
  if (existsSync(target)) throw new UsageError(`init: ${target} exists and is left as it is: remove it, or name another file with --file`);
  const read = (n: string) => readFile(path.join(dir, n), 'utf8').catch(() => undefined);
  const names = await readdir(dir);
  const testRequirements = TEST_REQUIREMENT_FILES.filter((f) => existsSync(path.join(dir, f)));
  const detected = detect({
    names,
    testRequirements,
    ...(names.includes('package.json') ? { packageJson: (await read('package.json')) ?? '' } : {}),
    ...(names.includes('pyproject.toml') ? { pyproject: (await read('pyproject.toml')) ?? '' } : {}),
    ...(names.includes('Makefile') ? { makefile: (await read('Makefile')) ?? '' } : {}),
  });
  let name = 'project';
  try {
    name = safeName(path.basename(dir), 'pipeline name');
  } catch {
    // a folder name that is no name: the starter is called "project"
  }
  const text = starterPipeline({ name, projectPath: path.relative(path.dirname(target), dir) || '.', fileName: path.basename(target), agent, git: existsSync(path.join(dir, '.git')), detected });
  await writeFile(target, text, { flag: 'wx' });
  process.stdout.write(
    `wrote ${target}: ${detected.ecosystem === 'unknown' ? 'no ecosystem found' : `a ${detected.ecosystem} project`}` +
      `${detected.test ? `, verified by ${detected.test}` : ', no test command found'}; give the agent its task and run: ` +
      `runner exec ${path.relative(process.cwd(), target) || target} --input task="..." (or commit a TASK.md and leave --input out)\n`,
  );
  return 0;
}
