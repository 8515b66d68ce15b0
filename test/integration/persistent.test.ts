/** persistent_directory: the project directory itself is the workspace; no git; changes listed per step. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, IMAGE, projectsForThisFile, runCli, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

async function contentDir(f: Fixture, name = 'content'): Promise<string> {
  const dir = path.join(f.root, name);
  await mkdir(dir);
  await writeFile(path.join(dir, 'keep.txt'), 'old\n');
  await writeFile(path.join(dir, 'gone.txt'), 'bye\n');
  execFileSync('chown', ['-R', '1000:1000', dir]);
  return dir;
}

function persistentYaml(dir: string, steps: string): string {
  return `version: 1
name: digest
project: { path: ${dir}, workspace: persistent_directory }
defaults: { image: ${IMAGE}, timeout: 1m }
steps:
${steps}`;
}

test('two runs accumulate files; each step lists what it added, modified and deleted, a planted symlink unfollowed', async () => {
  const f = await fixture();
  const dir = await contentDir(f);
  const file = await writePipeline(
    f,
    persistentYaml(
      dir,
      `  - id: write
    run: |
      echo "$RUNNER_RUN_ID" > "day-$RUNNER_RUN_ID.txt"
      rm -f gone.txt
      echo more >> keep.txt
      ln -sf /etc/shadow link
      test ! -e /home/agent/project-workspace
`,
    ),
  );
  const first = await execPipeline(f, file);
  assert.equal(first.code, 0, first.stderr);
  assert.equal(first.json.workspace, 'persistent_directory');
  assert.equal(first.json.branch, null);
  assert.equal(first.json.steps.write.commit, null);
  const c = first.json.steps.write.changes;
  assert.deepEqual(c.added.map((x: any) => x.path).sort(), [`day-${first.json.runId}.txt`, 'link']);
  assert.deepEqual(c.modified.map((x: any) => x.path), ['keep.txt']);
  assert.deepEqual(c.deleted.map((x: any) => [x.path, x.size]), [['gone.txt', 4]]);
  const link = c.added.find((x: any) => x.path === 'link');
  assert.equal(link.type, 'symlink');
  assert.equal(link.target, '/etc/shadow', 'the symlink is recorded by its target, never read through');
  assert.match(c.modified[0].sha256, /^[0-9a-f]{64}$/, 'contents are hashed with sha256');
  assert.equal(c.modified[0].size, 'old\nmore\n'.length);

  const second = await execPipeline(f, file);
  assert.equal(second.code, 0, second.stderr);
  const files = (await readdir(dir)).sort();
  assert.deepEqual(files, [`day-${first.json.runId}.txt`, `day-${second.json.runId}.txt`, 'keep.txt', 'link'].sort(), 'files accumulate');
  assert.equal(await readFile(path.join(dir, 'keep.txt'), 'utf8'), 'old\nmore\nmore\n');
  assert.deepEqual(second.json.steps.write.changes.added.map((x: any) => x.path), [`day-${second.json.runId}.txt`]);
  const record = JSON.parse(await readFile(path.join(f.home, 'runs', second.json.runId, 'run.json'), 'utf8'));
  assert.ok(record.steps[0].changes, 'run.json keeps the change list');

  // Plain runs show and runner diff list the changes too (no --json needed).
  const show = await runCli(['runs', 'show', first.json.runId, '--home', f.home]);
  assert.match(show.stdout, /\nchanges\n  write: 2 added, 1 modified, 1 deleted\n/);
  assert.match(show.stdout, new RegExp(`^    \\+ day-${first.json.runId}\\.txt$`, 'm'));
  assert.match(show.stdout, /^    \+ link -> \/etc\/shadow$/m);
  assert.match(show.stdout, /^    ~ keep\.txt$/m);
  assert.match(show.stdout, /^    - gone\.txt$/m);
  const diff = await runCli(['diff', first.json.runId, '--home', f.home]);
  assert.equal(diff.code, 0, diff.stderr);
  assert.match(diff.stdout, /^write: 2 added, 1 modified, 1 deleted\n/);
  assert.match(diff.stdout, /^  - gone\.txt$/m);
});

test('two concurrent runs on one directory are serialized; --no-wait fails fast', async () => {
  const f = await fixture();
  const dir = await contentDir(f);
  const file = await writePipeline(
    f,
    persistentYaml(
      dir,
      `  - id: slow
    run: |
      echo "start $RUNNER_RUN_ID $(date +%s%N)" >> log.txt
      echo "holding the directory"
      while [ ! -e release ]; do sleep 0.1; done
      rm release
      echo "end $RUNNER_RUN_ID $(date +%s%N)" >> log.txt
`,
    ),
  );
  // Each run's step holds the directory until the test releases it, so the runs overlap however slowly the
  // machine starts them: the first is released only once the second has said it waits (a sleep in the step
  // overlapped them only when the second runner started within it).
  const release = () => writeFileSync(path.join(dir, 'release'), '');
  let holding = 0;
  let waiting = false;
  const released: number[] = [];
  const onLine = (line: string) => {
    if (/^\[slow\] holding the directory$/.test(line)) holding++;
    if (/is in use by another run; waiting for it to finish/.test(line)) waiting = true;
    if (holding === 1 && waiting && !released.includes(1)) released.push(1), release();
    if (holding === 2 && !released.includes(2)) released.push(2), release();
  };
  const [a, b] = await Promise.all([execPipeline(f, file, [], { onLine }), execPipeline(f, file, [], { onLine })]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const lines = (await readFile(path.join(dir, 'log.txt'), 'utf8')).trim().split('\n').map((l) => l.split(' ').slice(0, 2).join(' '));
  const ids = lines.map((l) => l.split(' ')[1]);
  assert.equal(ids[0], ids[1], `one run's start and end are adjacent: ${lines}`);
  assert.equal(ids[2], ids[3]);
  assert.match(a.stderr + b.stderr, /is in use by another run; waiting for it to finish/);

  // --no-wait while a run holds the directory (its step said so, and waits to be released)
  let held!: () => void;
  const holds = new Promise<void>((r) => (held = r));
  const holder = execPipeline(f, file, [], { onLine: (line) => /^\[slow\] holding the directory$/.test(line) && held() });
  await holds;
  const impatient = await execPipeline(f, file, ['--no-wait']);
  release();
  assert.equal(impatient.code, 3, impatient.stderr);
  assert.match(impatient.json.error.message, /is in use by another run/);
  assert.equal((await holder).code, 0);
});

test('a missing path, a file, or a symlink to elsewhere is a clear error and nothing is created', async () => {
  const f = await fixture();
  const real = await contentDir(f, 'real');
  await writeFile(path.join(f.root, 'a-file'), 'x');
  await symlink(real, path.join(f.root, 'a-link'));
  const cases: Array<[string, RegExp]> = [
    ['missing', /does not exist/],
    ['a-file', /is not a directory/],
    ['a-link', /is a symlink \(to .*real\): point project\.path at the directory itself/],
  ];
  for (const [name, message] of cases) {
    const file = await writePipeline(f, persistentYaml(path.join(f.root, name), '  - id: a\n    run: "true"\n'), `${name}.yaml`);
    const r = await execPipeline(f, file);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.json.error.message, message);
    assert.equal(existsSync(path.join(f.root, 'missing')), false);
  }
  assert.equal(existsSync(f.home), false, 'no runner home was created');
});

test('a root-owned persistent directory is refused rather than given to the step', async () => {
  const f = await fixture();
  const dir = path.join(f.root, 'rootowned');
  await mkdir(dir);
  const file = await writePipeline(f, persistentYaml(dir, '  - id: a\n    run: "true"\n'));
  const r = await execPipeline(f, file);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.json.error.message, /belongs to uid 0, but a step runs as uid 65532 .*chown -R 65532:65532/);
});

test('an edit that keeps the size and puts the mtime back is still listed', async () => {
  const f = await fixture();
  const dir = await contentDir(f);
  const file = await writePipeline(
    f,
    persistentYaml(dir, `  - id: sneaky\n    run: |\n      cp -p keep.txt /tmp/ref\n      printf 'OLD\\n' > keep.txt\n      touch -r /tmp/ref keep.txt\n`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.json.steps.sneaky.changes.modified.map((c: any) => c.path), ['keep.txt']);
});

test('a paused runner keeps its lock on the directory', async () => {
  const f = await fixture();
  const dir = await contentDir(f);
  const file = await writePipeline(f, persistentYaml(dir, `  - id: slow\n    run: echo "holding"; sleep 3\n`));
  let paused: ReturnType<typeof import('node:child_process').spawn> | undefined;
  const holder = execPipeline(f, file, [], {
    onLine: (line, child) => {
      if (line.includes('[slow] holding') && !paused) {
        paused = child;
        child.kill('SIGSTOP');
      }
    },
  });
  while (!paused) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 1500));
  const other = await execPipeline(f, file, ['--no-wait']);
  paused.kill('SIGCONT');
  assert.equal(other.code, 3, other.stderr);
  assert.equal(other.json.error.code, 'workspace_busy');
  assert.equal((await holder).code, 0);
});

test('shared_workspace: steps that run at once share the one directory; each lists what changed by its end; no lane, no branch', async () => {
  const f = await fixture();
  const dir = await contentDir(f);
  const yaml = persistentYaml(
    dir,
    `  - id: a
    needs: []
    run: echo a > a.txt; while [ ! -e b.txt ]; do sleep 0.1; done
  - id: b
    needs: []
    run: echo b > b.txt; while [ ! -e a.txt ]; do sleep 0.1; done
  - id: both
    needs: [a, b]
    run: cat a.txt b.txt > both.txt
`,
  );
  const refused = await runCli(['validate', await writePipeline(f, yaml, 'refused.yaml')]);
  assert.equal(refused.code, 2, refused.stdout + refused.stderr);
  assert.match(refused.stdout + refused.stderr, /steps "a" and "b" \(neither needs the other\) would run at once in the one persistent directory.*shared_workspace: true/);

  const r = await execPipeline(f, await writePipeline(f, yaml.replace('steps:\n', 'shared_workspace: true\nsteps:\n')));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(await readFile(path.join(dir, 'both.txt'), 'utf8'), 'a\nb\n', 'each saw the other\'s file: one directory');
  const added = (id: string) => r.json.steps[id].changes.added.map((c: { path: string }) => c.path).sort();
  assert.deepEqual([...added('a'), ...added('b')].sort(), ['a.txt', 'b.txt'], 'every change listed once, under the step that ended first after it');
  assert.deepEqual(added('both'), ['both.txt']);
  assert.equal(r.json.attempts.find((x: { name: string }) => x.name === 'a').lane?.branch ?? null, null);
  assert.deepEqual(r.json.flow.keptBranches, []);
});
