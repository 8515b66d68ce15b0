/**
 * cache: with the real engine and real npm: what one run leaves the next run
 * of the same project reads, another project never sees it, a read-only use
 * writes nothing, a cache over its bound is pruned, and `runner cache ls|prune`
 * list and remove. No network: npm caches a tarball packed in the step.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, projectsForThisFile, runCli, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const TOOLCHAIN = 'runner/toolchain:latest';

function yaml(steps: string, cache = '[npm]'): string {
  return `version: 1
name: cached
project: { path: project }
defaults:
  image: ${TOOLCHAIN}
  resources: { memory: 512m, cpus: 1, pids: 256 }
  timeout: 2m
  cache: ${cache}
steps:
${steps}`;
}

/** The cache's data directory for the fixture's project, on the host. */
async function cacheData(f: Fixture, name = 'npm'): Promise<string> {
  const root = path.join(f.home, 'caches');
  const keys = (await readdir(root)).filter((k) => k.startsWith('project-'));
  const mine = [];
  for (const k of keys) {
    const p = JSON.parse(await readFile(path.join(root, k, 'project.json'), 'utf8')) as { path: string };
    if (p.path === execFileSync('realpath', [f.project], { encoding: 'utf8' }).trim()) mine.push(k);
  }
  assert.equal(mine.length, 1, `one cache directory for ${f.project}: ${keys}`);
  return path.join(root, mine[0]!, name, 'data');
}

const PACK_AND_ADD = `    run: |
      echo "cache is $npm_config_cache"
      mkdir -p pkg && cd pkg
      printf '{"name":"tiny-x","version":"1.0.0","main":"index.js"}' > package.json
      echo 'module.exports = 42' > index.js
      npm pack --silent
      npm cache add ./tiny-x-1.0.0.tgz
      echo from-run-1 > "$npm_config_cache/mark"
`;

const READ_BACK = `    run: |
      npm cache ls
      cat "$npm_config_cache/mark"
`;

test('what a run leaves in its npm cache, the next run of the project reads; another project never sees it', async () => {
  const f = await fixture({ owner: 1000 });
  const first = await execPipeline(f, await writePipeline(f, yaml(`  - id: fill\n${PACK_AND_ADD}`)));
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stderr, /cache is \/var\/cache\/runner\/npm/);
  const data = await cacheData(f);
  assert.equal((await stat(data)).uid, 1000, 'the cache belongs to the step\'s user (the project\'s owner)');

  const second = await execPipeline(f, await writePipeline(f, yaml(`  - id: read\n${READ_BACK}`), 'read.yaml'));
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, /pacote:tarball:file:.*tiny-x-1\.0\.0\.tgz/, 'npm finds the tarball run 1 cached');
  assert.match(second.stderr, /from-run-1/);

  // a step as another user gets the cache handed over, and writes
  const other = await execPipeline(f, await writePipeline(f, yaml(`  - id: as2000\n    user: "2000"\n    run: echo by-2000 > "$npm_config_cache/mark2"`), 'other-user.yaml'));
  assert.equal(other.code, 0, other.stderr);
  assert.equal(await readFile(path.join(data, 'mark2'), 'utf8'), 'by-2000\n');

  // another project, the same pipeline: an empty cache of its own
  const g = await fixture({ owner: 1000 });
  const elsewhere = await execPipeline(g, await writePipeline(g, yaml(`  - id: read\n    run: |\n      npm cache ls | grep tiny-x && echo SAW-IT || echo clean\n      test ! -e "$npm_config_cache/mark" && echo no-mark`), 'read.yaml'));
  assert.equal(elsewhere.code, 0, elsewhere.stderr);
  assert.match(elsewhere.stderr, /clean/);
  assert.match(elsewhere.stderr, /no-mark/);
  assert.doesNotMatch(elsewhere.stderr, /SAW-IT/);
  assert.notEqual(await cacheData(g), data);
});

test('a read-only use reads the cache and what it writes is thrown away; npm still works on it', async () => {
  const f = await fixture({ owner: 1000 });
  const fill = await execPipeline(f, await writePipeline(f, yaml(`  - id: fill\n${PACK_AND_ADD}`)));
  assert.equal(fill.code, 0, fill.stderr);
  const data = await cacheData(f);
  const ro = await execPipeline(
    f,
    await writePipeline(
      f,
      yaml(
        `  - id: look
    run: |
      cat "$npm_config_cache/mark"
      echo scribble > "$npm_config_cache/mark"
      echo new > "$npm_config_cache/new-file"
      mkdir -p p && cd p && printf '{"name":"p","version":"1.0.0"}' > package.json
      npm cache ls | grep -c tiny-x
`,
        '{ npm: ro }',
      ),
      'ro.yaml',
    ),
  );
  assert.equal(ro.code, 0, ro.stderr);
  assert.match(ro.stderr, /from-run-1/);
  assert.equal(await readFile(path.join(data, 'mark'), 'utf8'), 'from-run-1\n', 'the cache itself is untouched');
  assert.ok(!existsSync(path.join(data, 'new-file')));
  assert.deepEqual(await readdir(path.join(path.dirname(data), 'scratch')), [], 'the step\'s layer is gone');
});

test('a cache over its bound is pruned after the step, oldest entries first; a planted symlink is never followed', async () => {
  const f = await fixture({ owner: 1000 });
  const outside = path.join(f.root, 'outside');
  await mkdir(outside);
  await writeFile(path.join(outside, 'precious'), 'keep me\n');
  const steps = `  - id: fill
    run: |
      cd "$npm_config_cache"
      for i in 1 2 3 4 5 6; do head -c 300000 /dev/zero > old-$i; touch -d "2020-01-0$i" old-$i; done
      head -c 100000 /dev/zero > fresh
      ln -s ${outside} out-dir
      ln -s ${outside}/precious out-file
`;
  const run = await execPipeline(f, await writePipeline(f, yaml(steps, '{ npm: { max: 1m } }')));
  assert.equal(run.code, 0, run.stderr);
  const data = await cacheData(f);
  const du = Number(execFileSync('du', ['-s', '-B1', data], { encoding: 'utf8' }).split('\t')[0]);
  assert.ok(du <= 0.8 * 1024 * 1024, `pruned to 80% of 1m: ${du}`);
  const left = (await readdir(data)).sort();
  assert.ok(left.includes('fresh'), `the newest stays: ${left}`);
  assert.ok(!left.includes('old-1'), `the oldest goes: ${left}`);
  assert.equal(await readFile(path.join(outside, 'precious'), 'utf8'), 'keep me\n');
  const log = await readFile(path.join(f.home, 'runs', run.json.runId, 'steps', 'fill.log'), 'utf8');
  assert.match(log, /runner: cache npm: pruned from .* to .* \(its bound is 1m; the oldest entries went\)/);

  // runner cache ls lists it; prune removes it, and never what a link points to
  const ls = await runCli(['cache', 'ls', '--home', f.home, '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  const rows = JSON.parse(ls.stdout) as Array<{ project: string; name: string; bytes: number; maxBytes: number; busy?: string }>;
  const row = rows.find((r) => r.name === 'npm');
  assert.ok(row, ls.stdout);
  assert.equal(row.maxBytes, 1024 * 1024);
  assert.ok(row.bytes > 0 && row.bytes <= 0.8 * 1024 * 1024, String(row.bytes));
  assert.equal(row.busy, undefined);
  const table = await runCli(['cache', 'ls', '--home', f.home]);
  assert.match(table.stdout, /PROJECT\s+CACHE\s+SIZE\s+MAX\s+LAST USED\s+STATE/);
  assert.match(table.stdout, /npm\s+\S+\s+1m\s+\S+\s+idle/);

  const refused = await runCli(['cache', 'prune', '--home', f.home]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /say which caches/);
  const pruned = await runCli(['cache', 'prune', '--home', f.home, '--project', f.project]);
  assert.equal(pruned.code, 0, pruned.stderr);
  assert.match(pruned.stdout, /removed npm of .*project/);
  assert.ok(!existsSync(data));
  assert.equal(await readFile(path.join(outside, 'precious'), 'utf8'), 'keep me\n');
  const none = await runCli(['cache', 'ls', '--home', f.home]);
  assert.match(none.stdout, /no caches in/);
});

test('a cache a live run uses is neither removed nor measured under it', async () => {
  const f = await fixture({ owner: 1000 });
  // the step holds its cache until the test releases it (a 4 s sleep held it only while the machine was quick)
  const file = await writePipeline(
    f,
    yaml(`  - id: hold\n    run: |\n      echo holding\n      while [ ! -e "$npm_config_cache/release" ]; do sleep 0.1; done\n      rm "$npm_config_cache/release"\n      echo still-here > "$npm_config_cache/after"`),
  );
  let runId: string | undefined;
  let held!: () => void;
  const holds = new Promise<void>((r) => (held = r));
  const running = execPipeline(f, file, [], {
    onLine: (l) => {
      runId ??= /run (\d{8}-\d{6}-[a-z0-9]+)/.exec(l)?.[1];
      if (l === '[hold] holding') held();
    },
  });
  await holds;
  const deadline = Date.now() + 60_000;
  let out = '';
  while (Date.now() < deadline) {
    const ls = await runCli(['cache', 'ls', '--home', f.home]);
    out = ls.stdout;
    if (/in use by run/.test(out)) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.match(out, /npm\s+\S+\s+2g\s+\S+\s+in use by run \d{8}-\d{6}-/);
  const pruned = await runCli(['cache', 'prune', '--home', f.home, '--all']);
  assert.equal(pruned.code, 1, pruned.stdout + pruned.stderr);
  assert.match(pruned.stdout, /kept npm of .*: in use by run /);
  await writeFile(path.join(await cacheData(f), 'release'), '');
  const done = await running;
  assert.equal(done.code, 0, done.stderr);
  assert.equal(await readFile(path.join(await cacheData(f), 'after'), 'utf8'), 'still-here\n');
  assert.ok(runId);
  const again = await runCli(['cache', 'prune', '--home', f.home, '--all']);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /removed npm/);
});

test('two runs of a project fill its npm cache at once; npm finds both and the cache verifies', async () => {
  const f = await fixture({ owner: 1000 });
  const add = (n: string) => `  - id: add
    run: |
      mkdir -p pkg && cd pkg
      printf '{"name":"tiny-${n}","version":"1.0.0"}' > package.json
      for i in 1 2 3 4 5 6 7 8; do head -c 200000 /dev/urandom > blob-$i; done
      npm pack --silent
      npm cache add ./tiny-${n}-1.0.0.tgz
`;
  const [a, b] = await Promise.all([execPipeline(f, await writePipeline(f, yaml(add('a')), 'a.yaml')), execPipeline(f, await writePipeline(f, yaml(add('b')), 'b.yaml'))]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const check = await execPipeline(f, await writePipeline(f, yaml(`  - id: check\n    run: |\n      npm cache ls\n      npm cache verify`), 'check.yaml'));
  assert.equal(check.code, 0, check.stderr);
  assert.match(check.stderr, /tiny-a-1\.0\.0\.tgz/);
  assert.match(check.stderr, /tiny-b-1\.0\.0\.tgz/);
  assert.match(check.stderr, /Cache verified and compressed/);
});
