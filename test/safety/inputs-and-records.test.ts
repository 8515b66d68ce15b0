/**
 * The smaller holes a security review found, each played for real: a YAML
 * alias bomb and a 200 MB pipeline file, a NUL byte in an input sent to the
 * API, a 1 MiB output used in a later step's env, symlinks that leave
 * delivery.paths, the owner of the records in root's home, and a persistent
 * directory step that makes 20,000 files (the record's cap is 1,000).
 */
import assert from 'node:assert/strict';
import { chown, mkdir, open, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, git, IMAGE, pipelineYaml, projectsForThisFile, runCli, serveFolder, watchPeakMemory, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('an alias bomb and a 200 MB pipeline file are refused as bad input, with where, in bounded memory', async () => {
  const f = await fixture();
  const lines = ['version: 1', 'name: bomb', 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (const [i, c] of 'bcdefghi'.split('').entries()) lines.push(`${c}: &${c} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`);
  const bomb = await writePipeline(f, `${lines.join('\n')}\nsteps: []\n`, 'bomb.yaml');
  for (const args of [['validate', bomb], ['exec', bomb, '--home', f.home]]) {
    const r = await runCli(args);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /bomb\.yaml:4:\d+ YAML: .*expand too far/);
  }

  const huge = path.join(f.root, 'huge.yaml');
  const fh = await open(huge, 'w');
  const block = Buffer.from(`# ${'x'.repeat(1021)}\n`.repeat(1024));
  for (let i = 0; i < 200; i++) await fh.write(block);
  await fh.close();
  let mem: ReturnType<typeof watchPeakMemory> | undefined;
  const r = await runCli(['validate', huge], { onSpawn: (c) => (mem = watchPeakMemory(c.pid!)) });
  mem!.stop();
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /huge\.yaml the pipeline file is 209715200 bytes; at most 1048576 \(1 MiB\)/);
  console.log(`# a 200 MB pipeline file: refused, validate peak RSS ${(mem!.peak() / 1024 ** 2).toFixed(0)} MB`);
  assert.ok(mem!.peak() < 150 * 1024 ** 2);
});

test('a NUL byte in an input is a 400 from the API, and no run is made', async () => {
  const f = await fixture();
  const p = `version: 1\nname: nul\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\ninputs: { topic: { default: x } }\nsteps:\n  - id: s\n    run: echo "$T"\n    env: { T: "\${{ inputs.topic }}" }\n`;
  const s = await serveFolder(f, { 'nul.yaml': p }, '127.0.0.1:0');
  try {
    const res = await fetch(`${s.base}/api/pipelines/nul/runs`, { method: 'POST', body: JSON.stringify({ inputs: { topic: 'a\u0000b' } }) });
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: string }).error, /input topic holds a NUL byte/);
    assert.deepEqual(await readdir(path.join(f.home, 'runs')).catch(() => []), []);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});

test('a 1 MiB output used in env fails the step that would get it, with why; the run still has its diff', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: make
    outputs: [big]
    run: |
      echo made > made.txt
      { printf 'big='; printf '%01048000d\\n' 0; } >> "$RUNNER_OUTPUT"
  - id: use
    env: { BIG: "\${{ steps.make.outputs.big }}" }
    run: echo "\${#BIG}"
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.status, 'failed');
  assert.equal(r.json.steps.make.status, 'completed');
  assert.equal(r.json.steps.use.status, 'failed');
  assert.equal(r.json.error.code, 'step_not_started');
  assert.match(r.json.error.message, /not started: its environment variable BIG is 1023\.\dk, over the 128k a program can take in one variable: write big values to a file/);
  const patch = await readFile(path.join(f.home, 'runs', r.json.runId, 'diff.patch'), 'utf8');
  assert.match(patch, /\+made/);
});

test('symlinks out of delivery.paths are a scope_violation for apply and merge', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(
      `  - id: link
    run: |
      mkdir -p src
      echo ok > src/fine.txt
      ln -s ../.git src/gitdir
      ln -s /etc/passwd src/x
      ln -s fine.txt src/inside
      ln -s . src/self
      ln -s self/.. src/root
`,
      'delivery: { paths: ["src/**"] }\n',
    ),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const before = git(f.project, 'rev-parse', 'HEAD');
  for (const cmd of ['apply', 'merge']) {
    const d = await runCli([cmd, r.json.runId, '--home', f.home]);
    assert.equal(d.code, 1, `${cmd}: ${d.stdout}${d.stderr}`);
    assert.match(d.stderr, /symlinks that lead outside delivery\.paths \(src\/\*\*\): /);
    for (const bad of ['src/gitdir -> ../.git', 'src/x -> /etc/passwd', 'src/root -> self/..']) assert.ok(d.stderr.includes(bad), `${cmd} names ${bad}: ${d.stderr}`);
    assert.doesNotMatch(d.stderr, /src\/inside|src\/self/);
  }
  assert.equal(git(f.project, 'rev-parse', 'HEAD'), before);
  assert.equal(git(f.project, 'status', '--porcelain'), '', 'the checkout is untouched');
});

test("in root's home, the records of a run on another user's project belong to root", async () => {
  assert.equal(process.getuid?.(), 0, 'the integration tests run as root (as CI does)');
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(f, pipelineYaml('  - id: s\n    run: echo hi > hi.txt\n'));
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const st = await stat(path.join(f.home, 'runs', r.json.runId, 'diff.patch'));
  assert.equal(st.uid, 0);
  assert.equal(st.mode & 0o777, 0o644);
});

test('a persistent directory step that makes 20,000 files keeps a small record; the whole list is in its own file', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const dir = path.join(f.root, 'content');
  await mkdir(dir);
  await chown(dir, 1000, 1000); // a step never runs as root: the directory is its user's
  const file = await writePipeline(
    f,
    `version: 1\nname: many\nproject: { path: content, workspace: persistent_directory }\ndefaults: { image: ${IMAGE}, timeout: 4m }\nsteps:\n  - id: spray\n    run: |\n      for d in $(seq 1 20); do mkdir d$d; (cd d$d && seq 1 1000 | xargs touch); done\n`,
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  const runDir = path.join(f.home, 'runs', r.json.runId);
  const size = (await stat(path.join(runDir, 'run.json'))).size;
  const rec = JSON.parse(await readFile(path.join(runDir, 'run.json'), 'utf8'));
  const changes = rec.steps[0].changes;
  assert.equal(changes.cut.added, 20_020, 'the counts are of every change: 20 directories and 20,000 files');
  assert.equal(changes.added.length, 1000);
  assert.equal(changes.cut.file, 'steps/spray.changes.jsonl');
  const all = (await readFile(path.join(runDir, changes.cut.file), 'utf8')).trim().split('\n');
  assert.equal(all.length, 20_020);
  assert.deepEqual(Object.keys(JSON.parse(all[0]!)).slice(0, 2), ['kind', 'path']);
  assert.match(r.stderr, /step spray completed .*\(20020 added, 0 modified, 0 deleted\)/);
  console.log(`# 20,000 files in a persistent directory: run.json ${(size / 1024).toFixed(0)} KB (the whole list in its own file)`);
  assert.ok(size < 512 * 1024, `run.json is ${size} bytes`);

  const s = await serveFolder(f, {}, '127.0.0.1:0', { args: ['--project', f.root] }); // serves the runs of projects under --project (docs/operations.md)
  try {
    const list = await fetch(`${s.base}/api/runs`);
    const text = await list.text();
    assert.ok(text.length < 4096, `GET /api/runs answered ${text.length} bytes for one run`);
    assert.equal((JSON.parse(text) as Array<{ steps: unknown[] }>)[0]!.steps.length, 1);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});

test('an output holding a NUL byte fails the step that would get it in env, before its container', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: make
    outputs: [x]
    run: printf 'x=a\\000b\\n' >> "$RUNNER_OUTPUT"
  - id: use
    env: { X: "\${{ steps.make.outputs.x }}" }
    run: echo "$X"
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.use.status, 'failed');
  assert.match(r.json.error.message, /not started: its environment variable X holds a NUL byte/);
});
