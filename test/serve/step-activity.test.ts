/** What a running step is doing, for the run page's timeline: its output so far and, for an agent step, its calls, read on from where the last look stopped. */
import assert from 'node:assert/strict';
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { StepActivities } from '../../src/serve/step-activity.js';
import { CLAUDE_CODE_FAILS_AND_BACKGROUNDS } from '../fixtures/agent-streams.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

async function runDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runner-activity-'));
  roots.push(dir);
  await mkdir(path.join(dir, 'steps'));
  return dir;
}

const startedAt = '2026-11-27T10:00:00.000Z';

test("a running step's output: how much, when it last wrote, its last line; nothing for a run that is not running", async () => {
  const dir = await runDir();
  const a = new StepActivities();
  const rec = { status: 'running' as const, current: { id: 'build', startedAt }, running: [{ id: 'build', name: 'build', startedAt }, { id: 'docs', name: 'docs', startedAt }] };
  const log = `compiling\n${'x'.repeat(6000)}\nlinking \u001b[31mred\u001b[0m\n\n`;
  await writeFile(path.join(dir, 'steps', 'build.log'), log);
  const got = await a.of(dir, rec);
  assert.equal(got.build!.startedAt, startedAt);
  assert.equal(got.build!.output.bytes, Buffer.byteLength(log));
  assert.equal(got.build!.output.last, 'linking \\x1b[31mred\\x1b[0m', 'the last line that is not blank, its control characters made visible');
  assert.match(got.build!.output.lastAt ?? '', /^\d{4}-\d\d-\d\dT/);
  assert.equal(got.build!.agent, undefined, 'a step without a transcript is no agent step');
  assert.deepEqual(got.docs!.output, { bytes: 0, lastAt: null, last: null }, 'a step that printed nothing yet says so');
  await writeFile(path.join(dir, 'steps', 'docs.log'), 'y'.repeat(500));
  assert.equal((await a.of(dir, rec)).docs!.output.last!.length, 200, 'a long line is cut');
  assert.deepEqual(await a.of(dir, { status: 'succeeded', current: null }), {});
});

test("an agent step's tool calls and messages so far, read on from where the last look stopped, a line split between two looks counted once", async () => {
  const dir = await runDir();
  const a = new StepActivities();
  const rec = { status: 'running' as const, current: { id: 'implement', startedAt }, running: [{ id: 'implement', name: 'implement', startedAt }] };
  const transcript = path.join(dir, 'steps', 'implement.transcript.jsonl');
  const lines = CLAUDE_CODE_FAILS_AND_BACKGROUNDS;
  // the first five lines: the init, a message, a failing command and its result, half of the next call
  const cut = lines[4]!.length >> 1;
  await writeFile(transcript, `${lines.slice(0, 4).join('\n')}\n${lines[4]!.slice(0, cut)}`);
  const first = (await a.of(dir, rec)).implement!.agent!;
  assert.deepEqual([first.toolCalls, first.messages, first.failedTools], [1, 1, 1]);
  assert.equal(first.last, 'claude-code: ran: echo "not ok 1 - adds"; echo "# fail 1" >&2; exit 3', "the last event is the call, as the log says it (a result is its call's)");
  assert.equal(a.size(), 1);

  await appendFile(transcript, `${lines[4]!.slice(cut)}\n${lines.slice(5).join('\n')}\n`);
  const all = (await a.of(dir, rec)).implement!.agent!;
  const calls = lines.filter((l) => l.includes('"type":"tool_use"')).length;
  const texts = lines.filter((l) => l.includes('"type":"text"')).length;
  assert.deepEqual([all.toolCalls, all.messages], [calls, texts], 'every call and message once, the split line too');
  assert.match(all.last ?? '', /^claude-code: finished: success, 5 turns$/);
  assert.ok(all.failedTools >= 2, `the failing command and the one stopped at its timeout: ${all.failedTools}`);
  assert.deepEqual((await a.of(dir, rec)).implement!.agent, all, 'a look with nothing new says the same');

  await a.of(dir, { status: 'succeeded', current: null });
  assert.equal(a.size(), 0, "a run that ended has its transcripts' readers dropped");
});
