/**
 * Resume and fork for real (issue 34): the real engine, real git, the real
 * Claude Code CLI against the scripted model (test/fixtures/model-server.ts).
 * What a resume or a fork carries never runs again: the scripted model
 * receives no call for it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer, type SeenRequest, type Turn } from '../fixtures/model-server.js';
import { commitsOn, execPipeline, git, projectsForThisFile, runCli, writePipeline, type Fixture } from '../fixtures/project.js';
import { runCost } from '../../src/run/record.js';

const KEY = 'sk-ant-api03-resume-test-key-00000000000';
const WS = '/home/agent/run-workspace';
const env = { ANTHROPIC_API_KEY: KEY };
const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

const PLAN_PROMPT = 'PLAN-PROMPT, write PLAN.md';
const IMPL_PROMPT = 'IMPL-PROMPT, implement PLAN.md';
const write = (file: string, content: string): Turn => ({ tool: { name: 'Write', input: { file_path: `${WS}/${file}`, content } } });
const bash = (command: string): Turn => ({ tool: { name: 'Bash', input: { command, description: command } } });

/** plan (agent) → implement (agent) → verify (fails the first time, like a flaky test: it leaves .tried, committed with its failure) */
const pipeline = (server: ModelServer, o: { implPrompt?: string; budget?: number } = {}) => `version: 1
name: resumable
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
${o.budget ? `budget: { tokens: ${o.budget} }\n` : ''}agents:
  coder:
    use: claude-code
    base_url: ${server.url}
    max_turns: 20
steps:
  - id: plan
    agent: coder
    prompt: ${PLAN_PROMPT}
  - id: implement
    agent: coder
    prompt: ${o.implPrompt ?? IMPL_PROMPT}
  - id: verify
    image: runner/base:latest
    run: if [ -f .tried ]; then echo verify passed; else touch .tried; echo flaky; exit 1; fi
`;

const says = (r: SeenRequest, what: string) => JSON.stringify(r.body.messages ?? r.body.input ?? '').includes(what);
const record = async (f: Fixture, id: string) => JSON.parse(await readFile(path.join(f.home, 'runs', id, 'run.json'), 'utf8'));
const resume = (f: Fixture, id: string, extra: string[] = []) => runCli(['resume', id, '--home', f.home, '--json', ...extra], { env });

test('resume after a failed verify runs only verify again: no model call for plan or implement, one branch, each attempt on record', { timeout: 600_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({
    turns: [write('PLAN.md', '# Plan\n1. impl.txt\n'), { text: 'Planned.' }, write('impl.txt', 'done\n'), { text: 'Implemented.' }],
    usage: { input: 1000, output: 40 },
  });
  servers.push(server);
  const file = await writePipeline(f, pipeline(server));
  const first = await execPipeline(f, file, [], { env });
  assert.equal(first.code, 1, first.stderr);
  assert.equal(first.json.status, 'failed');
  assert.equal(first.json.steps.verify.status, 'failed');
  const id = first.json.runId;
  const callsBefore = server.requests.length;
  assert.ok(server.agentRequests().some((r) => says(r, PLAN_PROMPT)) && server.agentRequests().some((r) => says(r, IMPL_PROMPT)));
  const headBefore = git(f.project, 'rev-parse', `run/${id}`);
  const earlier = commitsOn(f.project, `run/${id}`, first.json.baseSha).map((c) => c.sha);

  const r = await resume(f, id);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.runId, id, 'the same run');
  assert.equal(r.json.status, 'succeeded');
  assert.match(r.stderr, /run \S+ goes on from step verify/);
  assert.match(r.stderr, /step plan: completed before \([0-9a-f]{10}\), not run again/);
  assert.match(r.stderr, /step implement: completed before \([0-9a-f]{10}\), not run again/);
  // the scripted model got nothing more: not a turn, not a side call
  assert.equal(server.requests.length, callsBefore, `the model was called again: ${server.requests.slice(callsBefore).map((q) => q.path).join(', ')}`);

  // one branch, its earlier commits kept under verify~2's
  const after = commitsOn(f.project, `run/${id}`, first.json.baseSha).map((c) => c.sha);
  assert.deepEqual(after.slice(-earlier.length), earlier);
  assert.equal(git(f.project, 'merge-base', '--is-ancestor', headBefore, `run/${id}`), '');
  const rec = await record(f, id);
  assert.equal(rec.branch, `run/${id}`);
  assert.equal(rec.baseSha, first.json.baseSha);
  assert.equal(rec.attempts.length, 2);
  assert.deepEqual(rec.attempts.map((a: { n: number; how: string; status: string }) => [a.n, a.how, a.status]), [[1, 'start', 'failed'], [2, 'resume', 'succeeded']]);
  assert.equal(rec.attempts[1].from, 'verify');
  assert.equal(rec.attempts[1].by.via, 'cli');
  assert.deepEqual(rec.steps.map((s: { name?: string; id: string; status: string }) => `${s.name ?? s.id}:${s.status}`), ['plan:completed', 'implement:completed', 'verify:failed', 'verify~2:completed']);
  assert.equal(rec.steps[3].runAttempt, 2);
  // each attempt's log its own
  assert.match(await readFile(path.join(f.home, 'runs', id, 'steps', 'verify.log'), 'utf8'), /flaky/);
  const log2 = await readFile(path.join(f.home, 'runs', id, 'steps', 'verify~2.log'), 'utf8');
  assert.match(log2, /verify passed/);
  assert.doesNotMatch(log2, /flaky/);
  // the diff and the cost are the whole run's
  const diff = await readFile(path.join(f.home, 'runs', id, 'diff.patch'), 'utf8');
  for (const name of ['PLAN.md', 'impl.txt', '.tried']) assert.ok(diff.includes(`diff --git a/${name} b/${name}\n`), `${name} in the diff`);
  const seen = server.reportedUsage();
  assert.deepEqual(runCost(rec).tokens, { input: seen.input, output: seen.output });
  const shown = await runCli(['runs', 'show', id, '--home', f.home]);
  assert.match(shown.stdout, /verify~2\s+completed/);

  // (d) a succeeded run is not resumed: said, with what to do
  const again = await resume(f, id);
  assert.equal(again.code, 2, 'bad input');
  assert.match(again.stdout + again.stderr, /run \S+ cannot be resumed: it succeeded: there is nothing left to run \(fork it to run a step again: runner fork RUN --from STEP\)/);
});

test('resume after a budget stop counts what was spent; raised with --pipeline it finishes, plan never called again', { timeout: 900_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({
    turns: [
      write('PLAN.md', '# Plan\n'),
      { text: 'Planned.' },
      ...Array.from({ length: 6 }, (_, i) => bash(`echo ${i} >> work.txt`)),
      { text: 'Implemented.' },
    ],
    usage: { input: 1000, output: 40 },
  });
  servers.push(server);
  const file = await writePipeline(f, pipeline(server, { budget: 4000 }));
  const first = await execPipeline(f, file, [], { env });
  assert.equal(first.code, 1, first.stderr);
  assert.equal(first.json.steps.plan.status, 'completed');
  assert.equal(first.json.steps.implement.status, 'budget_exhausted', JSON.stringify(first.json.steps.implement));
  const id = first.json.runId;
  const spent = (rec: { steps: Array<{ usage?: { inputTokens: number; outputTokens: number } }> }) => rec.steps.reduce((n, s) => n + (s.usage ? s.usage.inputTokens + s.usage.outputTokens : 0), 0);
  const spent1 = spent(await record(f, id));
  assert.ok(spent1 >= 4000, `spent ${spent1}`);

  // The budget raised by less than one call: were the first start's spending forgotten, implement would finish; counted, one call and it stops again.
  const tight = await writePipeline(f, pipeline(server, { budget: spent1 + 500 }), 'tight.yaml');
  let mark = server.requests.length;
  const r2 = await resume(f, id, ['--pipeline', tight]);
  assert.equal(r2.code, 1, r2.stderr);
  assert.equal(r2.json.steps.implement.status, 'budget_exhausted');
  const second = server.requests.slice(mark);
  assert.equal(second.filter((q) => q.answer !== 'side').length, 1, `${second.length} calls reached the model`);
  assert.ok(second.every((q) => !says(q, PLAN_PROMPT)));

  // Raised enough: it finishes; plan is never called again.
  const roomy = await writePipeline(f, pipeline(server, { budget: 100_000 }), 'roomy.yaml');
  mark = server.requests.length;
  const r3 = await resume(f, id, ['--pipeline', roomy]);
  assert.equal(r3.json.steps.implement.status, 'completed', r3.stderr);
  const third = server.requests.slice(mark).filter((q) => q.answer !== 'side');
  assert.ok(third.length >= 1 && third.every((q) => says(q, IMPL_PROMPT) && !says(q, PLAN_PROMPT)));
  const rec = await record(f, id);
  assert.deepEqual(rec.attempts.map((a: { how: string; status: string }) => `${a.how}:${a.status}`), ['start:failed', 'resume:failed', 'resume:failed']);
  assert.deepEqual(rec.steps.map((s: { name?: string; id: string; status: string }) => `${s.name ?? s.id}:${s.status}`), [
    'plan:completed', 'implement:budget_exhausted', 'implement~2:budget_exhausted', 'implement~3:completed', 'verify:failed',
  ]);
  assert.equal(rec.steps.filter((s: { id: string }) => s.id === 'plan').length, 1);
  assert.match(await readFile(path.join(f.home, 'runs', id, 'steps', 'implement~2.log'), 'utf8'), /budget/);
});

test('fork from implement with a changed prompt: a new run from plan\'s commit, plan carried, both listed, the fork merged', { timeout: 900_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({
    turns: [write('PLAN.md', '# Plan\n'), { text: 'Planned.' }, write('impl.txt', 'first try\n'), { text: 'Implemented.' }, write('impl.txt', 'second try\n'), { text: 'Implemented better.' }],
    usage: { input: 1000, output: 40 },
  });
  servers.push(server);
  const file = await writePipeline(f, pipeline(server));
  const first = await execPipeline(f, file, [], { env });
  assert.equal(first.json.status, 'failed', first.stderr);
  const id = first.json.runId;
  const old = await record(f, id);
  const planCommit = old.steps.find((s: { id: string }) => s.id === 'plan').commit;
  assert.match(planCommit, /^[0-9a-f]{40}$/);
  const oldDiff = await readFile(path.join(f.home, 'runs', id, 'diff.patch'), 'utf8');

  // (d) a changed pipeline is refused for a resume, showing the difference
  const changed = await writePipeline(f, pipeline(server, { implPrompt: 'NEW-PROMPT, implement PLAN.md with care' }), 'changed.yaml');
  await writeFile(file, await readFile(changed, 'utf8'));
  const refused = await resume(f, id);
  assert.equal(refused.code, 2, 'bad input');
  assert.match(refused.stdout + refused.stderr, /changed since run \S+ ran with it:\nrunner: {5}at line 16:\nrunner: {5}- {5}prompt: IMPL-PROMPT, implement PLAN\.md\nrunner: {5}\+ {5}prompt: NEW-PROMPT, implement PLAN\.md with care\nrunner: {3}to resume with the file as it is now, say so: runner resume \S+ --pipeline /);
  assert.equal((await record(f, id)).status, 'failed', 'nothing changed');

  const mark = server.requests.length;
  const fk = await runCli(['fork', id, '--from', 'implement', '--pipeline', changed, '--home', f.home, '--json'], { env });
  assert.equal(fk.json.status, 'failed', fk.stderr); // its verify fails the first time too: it begins before verify's .tried
  const fid = fk.json.runId;
  assert.notEqual(fid, id);
  assert.match(fk.stderr, new RegExp(`run ${fid} is a fork of ${id} from step implement`));
  const forked = server.requests.slice(mark).filter((q) => q.answer !== 'side');
  assert.ok(forked.length >= 1);
  assert.ok(forked.every((q) => says(q, 'NEW-PROMPT') && !says(q, PLAN_PROMPT) && !says(q, IMPL_PROMPT)), 'only implement ran, with the new prompt');

  const rec = await record(f, fid);
  assert.deepEqual(rec.forkOf, { runId: id, step: 'implement', commit: planCommit });
  assert.equal(rec.steps[0].id, 'plan');
  assert.deepEqual(rec.steps[0].carried, { from: id });
  assert.equal(rec.steps[0].commit, planCommit);
  assert.equal(rec.baseSha, old.baseSha);
  // the fork's branch begins at plan's commit: plan's commit, then its own
  const commits = commitsOn(f.project, `run/${fid}`, old.baseSha);
  assert.equal(commits.at(-1)!.sha, planCommit);
  assert.equal(git(f.project, 'show', `run/${fid}:impl.txt`), 'second try');
  assert.equal(git(f.project, 'show', `run/${id}:impl.txt`), 'first try', 'the old run\'s branch untouched');
  // each its own diff; the fork's cost is its own (plan was paid by the run it came from)
  const forkDiff = await readFile(path.join(f.home, 'runs', fid, 'diff.patch'), 'utf8');
  assert.match(forkDiff, /\+second try/);
  assert.match(oldDiff, /\+first try/);
  assert.match(forkDiff, /\+\+\+ b\/PLAN\.md/);
  const implUsage = rec.steps.find((s: { id: string }) => s.id === 'implement').usage;
  assert.deepEqual(runCost(rec).tokens, { input: implUsage.inputTokens, output: implUsage.outputTokens });

  const ls = await runCli(['runs', 'ls', '--home', f.home]);
  assert.match(ls.stdout, new RegExp(id));
  assert.match(ls.stdout, new RegExp(fid));

  // a resume of the fork (its verify, flaky) then a merge of it: deliverable
  const done = await resume(f, fid);
  assert.equal(done.json.status, 'succeeded', done.stderr);
  git(f.project, 'branch', 'target', 'main');
  execFileSync('chown', ['-R', '1000:1000', path.join(f.project, '.git')]); // made as root here; the project's owner merges
  const merged = await runCli(['merge', fid, '--into', 'target', '--home', f.home]);
  assert.equal(merged.code, 0, merged.stdout + merged.stderr);
  assert.equal(git(f.project, 'show', 'target:impl.txt'), 'second try');
  assert.equal(git(f.project, 'show', 'target:PLAN.md'), '# Plan');
});
