/**
 * Resume and fork through runner serve's API (on 127.0.0.1) and through MCP
 * (the SDK's client on `runner mcp`): the same operations as the CLI's, one
 * each; and a run being continued is not continued twice.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, IMAGE, projectsForThisFile, runCli, serveFolder, until, type Fixture } from '../fixtures/project.js';

// before the fixtures' own after (their removal): the servers and clients go first
const stops: Array<() => unknown> = [];
after(async () => {
  for (const s of stops) await s();
});
const fixture = projectsForThisFile();

// a runs once (each run of it adds a line); b fails the first time (a flaky test), leaving .tried; once it passes it takes a few seconds
const FLAKY = `version: 1
name: flaky
project: { path: ../project, push: never }
defaults: { image: ${IMAGE}, timeout: 2m }
steps:
  - id: a
    run: echo ran >> a.txt
  - id: b
    run: if [ -f .tried ]; then sleep 3; echo passed; else touch .tried; echo flaky; exit 1; fi
`;

const rec = async (f: Fixture, id: string) => JSON.parse(await readFile(path.join(f.home, 'runs', id, 'run.json'), 'utf8'));
const names = (r: { steps: Array<{ id: string; name?: string; status: string }> }) => r.steps.map((s) => `${s.name ?? s.id}:${s.status}`);
async function failedRun(f: Fixture, file: string): Promise<string> {
  const r = await runCli(['exec', file, '--json', '--home', f.home]);
  assert.equal(r.json?.status, 'failed', r.stderr);
  return r.json.runId;
}
const ended = (f: Fixture, id: string) => until(`run ${id} to end`, async () => {
  const r = await rec(f, id);
  return ['running', 'queued'].includes(r.status) ? undefined : r;
}, 120_000);

test('API: resume (twice at once: one goes on), a CLI resume of it while it runs, fork, and their refusals', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const serve = await serveFolder(f, { 'flaky.yaml': FLAKY }, '127.0.0.1:0');
  stops.push(() => serve.child.kill('SIGTERM'), () => serve.exited);
  const file = path.join(f.root, 'pipelines', 'flaky.yaml');
  const id = await failedRun(f, file);
  const post = (p: string, body: object) => fetch(`${serve.base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  const [one, two] = await Promise.all([post(`/api/runs/${id}/resume`, {}), post(`/api/runs/${id}/resume`, {})]);
  const answers = [(await one.json()) as any, (await two.json()) as any];
  assert.deepEqual([one.status, two.status].sort(), [202, 409], JSON.stringify(answers));
  assert.deepEqual(answers.find((a) => a.runId), { runId: id, from: 'b' });
  assert.equal(answers.find((a) => a.code)!.code, 'not_resumable');

  // while it goes on, the CLI cannot continue it too
  await until('the resumed run running', async () => ((await rec(f, id)).status === 'running' ? true : undefined));
  const cli = await runCli(['resume', id, '--home', f.home]);
  assert.equal(cli.code, 2, cli.stderr);
  assert.match(cli.stderr, /cannot be resumed: it has not ended/);

  const done = await ended(f, id);
  assert.equal(done.status, 'succeeded');
  assert.deepEqual(names(done), ['a:completed', 'b:failed', 'b~2:completed']);
  assert.equal(done.attempts[1].by.via, 'api');
  assert.equal(done.attempts.length, 2, 'the refused resumes left no attempt');
  assert.equal((await runCli(['diff', id, '--home', f.home])).stdout.match(/^\+ran$/gm)?.length, 1, 'a ran once');

  const again = await post(`/api/runs/${id}/resume`, {});
  assert.equal(again.status, 409);
  assert.match(((await again.json()) as any).error, /it succeeded: there is nothing left to run/);

  const fk = await post(`/api/runs/${id}/fork`, { from: 'b' });
  assert.equal(fk.status, 202);
  const { runId: fid, forkOf } = (await fk.json()) as any;
  assert.equal(forkOf, id);
  const forked = await ended(f, fid);
  assert.equal(forked.status, 'failed', 'b begins again before .tried');
  assert.deepEqual(names(forked), ['a:completed', 'b:failed']);
  assert.deepEqual(forked.steps[0].carried, { from: id });
  assert.equal(forked.forkOf.commit, done.steps[0].commit);

  for (const from of ['../../etc', 'b/../a', 'nope']) {
    const bad = await post(`/api/runs/${id}/fork`, { from });
    assert.equal(bad.status, 400, from);
    assert.match(((await bad.json()) as any).error, new RegExp(`has no step ${JSON.stringify(from).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} that ran; its steps: a, b`));
  }
  assert.equal((await post(`/api/runs/../etc/resume`, {})).status, 404);
});

test('MCP: resume_run and fork_run through the SDK client', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const dir = path.join(f.root, 'pipelines');
  await import('node:fs/promises').then(async (fs) => {
    await fs.mkdir(dir);
    await fs.writeFile(path.join(dir, 'flaky.yaml'), FLAKY);
  });
  const id = await failedRun(f, path.join(dir, 'flaky.yaml'));
  const client = new Client({ name: 'resume-test', version: '1' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--home', f.home, '--pipelines', dir, '--project', f.project], env: process.env as Record<string, string>, stderr: 'pipe' }));
  stops.push(() => client.close());
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: args }, undefined, { timeout: 180_000 })) as { isError?: boolean; content: Array<{ text: string }> };
    return { isError: r.isError === true, body: JSON.parse(r.content[0]!.text) };
  };
  const resumed = await call('resume_run', { run_id: id });
  assert.equal(resumed.isError, false, JSON.stringify(resumed.body));
  assert.equal(resumed.body.from, 'b');
  // at once: the run is starting again, not the failed run it was (wait_for_run saw it ended before)
  const now = await call('run_status', { run_id: id });
  assert.ok(['starting', 'running'].includes(now.body.status), JSON.stringify(now.body));
  const twice = await call('resume_run', { run_id: id });
  assert.equal(twice.isError, true);
  assert.equal(twice.body.code, 'not_resumable');
  const waited = await call('wait_for_run', { run_id: id, timeout_seconds: 120 });
  assert.equal(waited.body.status, 'succeeded', JSON.stringify(waited.body));
  const r = await rec(f, id);
  assert.deepEqual(names(r), ['a:completed', 'b:failed', 'b~2:completed']);
  assert.equal(r.attempts[1].by.via, 'mcp');

  const refused = await call('resume_run', { run_id: id });
  assert.equal(refused.isError, true);
  assert.equal(refused.body.code, 'not_resumable');

  const fk = await call('fork_run', { run_id: id, from: 'b' });
  assert.equal(fk.isError, false, JSON.stringify(fk.body));
  assert.equal(fk.body.forkOf, id);
  const fw = await call('wait_for_run', { run_id: fk.body.runId, timeout_seconds: 120 });
  assert.equal(fw.body.status, 'failed');
  assert.deepEqual((await rec(f, fk.body.runId)).forkOf.runId, id);
});
