/**
 * The example pipelines as a user runs them: make demo-agent's rehearsal of
 * pipelines/implement-review.yaml, and pipelines/daily-digest.yaml on a folder
 * of notes, each with the real Claude Code CLI against a scripted model.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chown, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ModelServer } from '../fixtures/model-server.js';
import { execPipeline, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

test('make demo-agent: the rehearsal of implement-review loops (changes requested twice, then approved) and verifies: six agent commits in order', { timeout: 900_000 }, () => {
  execFileSync('bash', ['scripts/demo-agent-repo.sh'], { cwd: REPO, stdio: 'ignore' });
  const r = spawnSync(process.execPath, ['scripts/demo-agent.mjs'], { cwd: REPO, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /REHEARSAL: the real Claude Code CLI in its container, against a SCRIPTED model/);
  assert.match(r.stderr, /runner: run \S+ succeeded/);
  const project = path.join(REPO, '.demo/agent-project');
  const branch = execFileSync('git', ['-C', project, 'for-each-ref', '--sort=-refname', '--format=%(refname:short)', 'refs/heads/run/'], { encoding: 'utf8' }).split('\n')[0]!;
  const log = execFileSync('git', ['-C', project, 'log', '--reverse', '--format=%s', `main..${branch}`], { encoding: 'utf8' });
  assert.deepEqual(log.trim().split('\n'), [
    'step/implement (coder): Added greet() in greet.js; npm test passes.',
    'step/review (reviewer): Reviewed greet.js: CHANGES_REQUESTED (greet ignores its name)',
    'step/implement#2 (coder): greet(name) now uses the name.',
    'step/review#2 (reviewer): Reviewed greet.js: CHANGES_REQUESTED (test another name)',
    'step/implement#3 (coder): Tested greet with another name; npm test passes.',
    'step/review#3 (reviewer): Reviewed greet.js: APPROVED',
  ], 'the test step changes nothing, so it has no commit');
  assert.match(execFileSync('git', ['-C', project, 'show', `${branch}:REVIEW.md`], { encoding: 'utf8' }), /APPROVED/);
  assert.match(execFileSync('git', ['-C', project, 'show', `${branch}:test.js`], { encoding: 'utf8' }), /greet\('ada'\)/);
});

test('daily-digest writes the day\'s digest into its folder of notes and lists it in the record', { timeout: 600_000 }, async () => {
  const f = await fixture();
  const dir = path.join(f.root, 'digest');
  await mkdir(path.join(dir, 'notes'), { recursive: true });
  await writeFile(path.join(dir, 'notes', 'monday.md'), '- the build got faster\n');
  execFileSync('chown', ['-R', '1000:1000', dir]);
  await chown(dir, 1000, 1000);
  const server = await ModelServer.start({
    turns: [
      { tool: { name: 'Write', input: { file_path: '/home/agent/run-workspace/digest-2026-11-23.md', content: '- The build got faster (notes/monday.md)\n' } } },
      { text: 'Wrote digest-2026-11-23.md from one new note.' },
    ],
  });
  servers.push(server);
  const original = await readFile(path.join(REPO, 'pipelines/daily-digest.yaml'), 'utf8');
  const text = original.replace('path: ../.demo/digest', `path: ${dir}`).replace(/^( +)use: claude-code$/m, `$&\n$1base_url: ${server.url}`);
  const r = await execPipeline(f, await writePipeline(f, text), [], { env: { ANTHROPIC_API_KEY: 'sk-ant-test-digest-0000000000' } });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual((await readdir(dir)).sort(), ['digest-2026-11-23.md', 'notes']);
  assert.deepEqual(r.json.steps.digest.changes.added.map((c: { path: string }) => c.path), ['digest-2026-11-23.md']);
  assert.equal(r.json.steps.digest.result, 'Wrote digest-2026-11-23.md from one new note.');
});
