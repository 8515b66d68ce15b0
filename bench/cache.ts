/**
 * bench/cache: a second run's install step with the project's npm cache,
 * against the first run's (an empty cache), on a real npm project (a handful
 * of pinned dependencies and their trees, from the npm registry).
 *
 * Each round empties the cache (`runner cache prune`), then runs the same
 * pipeline twice: `npm ci` with `cache: [npm]`; the install step's own time
 * is read from the run's record. Prints the ratio of the medians (aim:
 * <= 0.3, issue 24).
 *
 * This machine reaches the registry through a TLS-inspecting proxy whose CA
 * is in the host's bundle but not in runner/toolchain: the bench copies the
 * host's bundle into the project and points NODE_EXTRA_CA_CERTS at it.
 *
 *   node dist/bench/cache.js [ROUNDS]
 */
import { execFileSync } from 'node:child_process';
import { copyFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { git, makeProject, runCli, writePipeline } from '../test/fixtures/project.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 3);
const HOST_CA = '/etc/ssl/certs/ca-certificates.crt';

/** The test tools of the npm projects of issue 24 (ava, xo, tsd: about 700 packages), and a few runtime dependencies. */
const PACKAGE = {
  name: 'cache-bench',
  version: '1.0.0',
  private: true,
  dependencies: { chalk: '4.1.2', ms: '2.1.3', yargs: '17.7.2' },
  devDependencies: { ava: '6.1.3', tsd: '0.31.2', xo: '0.59.3' },
};

function pipeline(run: string, cache: string, network = 'bridge'): string {
  return `version: 1
name: cache-bench
project: { path: project, push: never }
defaults:
  image: runner/toolchain:latest
  resources: { memory: 2g, cpus: 2, pids: 1024 }
  network: ${network}
  timeout: 15m
  cache: ${cache}
env: { NODE_EXTRA_CA_CERTS: /home/agent/run-workspace/ca.crt }
steps:
  - id: install
    run: ${run}
`;
}

async function main(): Promise<void> {
  const f = await makeProject({ remote: false });
  try {
    await writeFile(path.join(f.project, 'package.json'), `${JSON.stringify(PACKAGE, null, 2)}\n`);
    await writeFile(path.join(f.project, '.gitignore'), 'node_modules/\n');
    await copyFile(HOST_CA, path.join(f.project, 'ca.crt'));
    git(f.project, 'add', '-A');
    git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'a real npm project');

    // The lockfile, made once by a step (no cache: the bench's cache starts empty), taken into the project.
    const lockFile = await writePipeline(f, pipeline('npm install --package-lock-only --no-audit --no-fund', '[]'), 'lock.yaml');
    const lock = await runCli(['exec', lockFile, '--json', '--home', f.home]);
    if (lock.code !== 0) throw new Error(`making the lockfile failed:\n${lock.stderr.slice(-3000)}`);
    git(f.project, 'checkout', lock.json.branch, '--', 'package-lock.json');
    git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'lockfile');
    const packages = Object.keys((JSON.parse(execFileSync('git', ['-C', f.project, 'show', 'HEAD:package-lock.json'], { encoding: 'utf8' })) as { packages: Record<string, unknown> }).packages).length - 1;

    const file = await writePipeline(f, pipeline('npm ci --no-audit --no-fund', '[npm]'), 'install.yaml');
    // the same install with no network at all: it can only come from the cache
    const offline = await writePipeline(f, pipeline('npm ci --no-audit --no-fund', '[npm]', 'none'), 'offline.yaml');
    const timed = async (which: string): Promise<{ step: number; wall: number }> => {
      const t0 = performance.now();
      const r = await runCli(['exec', which, '--json', '--home', f.home]);
      if (r.code !== 0) throw new Error(`the install run failed:\n${r.stderr.slice(-3000)}`);
      return { step: r.json.steps.install.durationMs as number, wall: performance.now() - t0 };
    };
    // the same project without its lockfile (most libraries commit none): npm install --no-package-lock
    const bare = await writePipeline(f, pipeline('rm package-lock.json && npm install --no-audit --no-fund --no-package-lock', '[npm]'), 'bare.yaml');
    const first: number[] = [];
    const second: number[] = [];
    const cut: number[] = [];
    const wall: Array<[number, number]> = [];
    const bareFirst: number[] = [];
    const bareSecond: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      await runCli(['cache', 'prune', '--home', f.home, '--project', f.project]);
      const a = await timed(file);
      const b = await timed(file);
      first.push(a.step);
      second.push(b.step);
      wall.push([a.wall, b.wall]);
      cut.push((await timed(offline)).step);
      bareFirst.push((await timed(bare)).step);
      bareSecond.push((await timed(bare)).step);
      console.log(`round ${i + 1}: first ${first[i]} ms, second ${second[i]} ms (whole runs ${a.wall.toFixed(0)} and ${b.wall.toFixed(0)} ms), second with network: none ${cut[i]} ms; without a lockfile: first ${bareFirst[i]} ms, second ${bareSecond[i]} ms`);
    }
    const ls = await runCli(['cache', 'ls', '--home', f.home, '--json']);
    const size = (JSON.parse(ls.stdout) as Array<{ bytes: number }>)[0]?.bytes ?? 0;
    const a = median(first);
    const b = median(second);
    report({
      bench: 'cache',
      against: 'the first run (empty cache)',
      aim: '<= 0.3',
      ratio: b / a,
      detail: `npm ci of ${packages} packages: second run ${b.toFixed(0)} ms, first ${a.toFixed(0)} ms (the step's time, medians of ${ROUNDS}; first ${first.join(' ')}, second ${second.join(' ')}; whole runs, the first keeping its tree: ${median(wall.map((w) => w[0])).toFixed(0)} and ${median(wall.map((w) => w[1])).toFixed(0)} ms); with network: none, from the cache alone, ${median(cut).toFixed(0)} ms; the cache with 2 trees ${(size / 1024 ** 2).toFixed(0)} MiB`,
    });
    report({
      bench: 'cache: no lockfile',
      against: 'the first run (no tree kept)',
      aim: '<= 0.3',
      ratio: median(bareSecond) / median(bareFirst),
      detail: `npm install --no-package-lock of the same package.json: second run ${median(bareSecond).toFixed(0)} ms, first ${median(bareFirst).toFixed(0)} ms (medians of ${ROUNDS}; first ${bareFirst.join(' ')}, second ${bareSecond.join(' ')})`,
    });
  } finally {
    await runCli(['cache', 'prune', '--home', f.home, '--all']).catch(() => undefined);
    await f.cleanup();
  }
}

await main();
