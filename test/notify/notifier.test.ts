import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { notifyRunEnd, notifyRunEvent, settled } from '../../src/notify/notifier.js';
import { newRecord, type RunRecord } from '../../src/run/record.js';
import { verifySignature } from '../../src/notify/sign.js';
import { receiver } from './receiver.js';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function eventsFile(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'notify-'));
  dirs.push(d);
  return path.join(d, 'events.jsonl');
}

async function events(file: string): Promise<Array<Record<string, unknown>>> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
}

const rec = (status: RunRecord['status']) =>
  newRecord({ runId: 'r1', pipeline: 'nightly', pipelineFile: '/p.yaml', project: '/p', workspace: 'git_worktree', status, startedAt: '2030-01-02T03:04:05Z', pid: 1 });
const SECRET = 'never-in-a-log-7f3a';
const FAST = { attempts: 3, firstPauseMs: 50, attemptMs: 300, deadlineMs: 1500 };

test('the entries whose on: names the status are sent, signed; the others are not; a success is a notify_sent event', async () => {
  const team = await receiver();
  const other = await receiver();
  const file = await eventsFile();
  notifyRunEnd({
    notify: {
      team: { webhook: team.url, secret: 'WEBHOOK_SECRET', on: ['failed'], format: 'json' },
      quiet: { webhook: other.url, on: ['succeeded'], format: 'json' },
    },
    record: rec('failed'),
    secrets: { WEBHOOK_SECRET: SECRET },
    eventsFile: file,
    now: () => new Date(),
    limits: FAST,
  });
  await settled();
  assert.equal(other.got.length, 0);
  assert.equal(team.got.length, 1);
  const g = team.got[0]!;
  assert.equal(verifySignature(SECRET, { timestamp: g.headers['x-runner-timestamp'] as string, signature: g.headers['x-runner-signature'] as string }, g.body, new Date()), 'ok');
  assert.equal((JSON.parse(g.body) as { status: string }).status, 'failed');
  const ev = await events(file);
  assert.deepEqual(ev.map((e) => [e.message, e.notify, e.status, e.httpStatus, e.attempt]), [['notify_sent', 'team', 'failed', 204, 1]]);
});

test('it returns at once whatever the receiver does; each failed attempt and the giving up are notify_failed events, without the secret', async () => {
  const down = await receiver((n) => (n === 1 ? 503 : 'hang'));
  const file = await eventsFile();
  const started = Date.now();
  notifyRunEnd({ notify: { team: { webhook: down.url, secret: 'WEBHOOK_SECRET', on: ['succeeded'], format: 'slack' } }, record: rec('succeeded'), secrets: { WEBHOOK_SECRET: SECRET }, eventsFile: file, now: () => new Date(), limits: FAST });
  assert.ok(Date.now() - started < 50, 'notifyRunEnd waited on the receiver');
  await settled();
  assert.ok(Date.now() - started < 2500, `settled after ${Date.now() - started} ms, deadline 1500 ms`);
  const ev = await events(file);
  assert.ok(ev.length >= 3, JSON.stringify(ev));
  assert.ok(ev.every((e) => e.message === 'notify_failed' && e.notify === 'team' && e.level === 'warn'));
  assert.equal(ev[0]!.httpStatus, 503);
  assert.match(String(ev[1]!.error), /no answer within/);
  assert.equal(ev.at(-1)!.final, true);
  assert.ok(!(await readFile(file, 'utf8')).includes(SECRET));
  assert.deepEqual(Object.keys(JSON.parse(down.got[0]!.body) as object), ['text']);
});

test('a run that has not ended, or a file without notify:, sends nothing', async () => {
  const r = await receiver();
  const file = await eventsFile();
  notifyRunEnd({ notify: { team: { webhook: r.url, on: ['succeeded', 'failed'], format: 'json' } }, record: rec('running'), secrets: {}, eventsFile: file, now: () => new Date() });
  notifyRunEnd({ notify: undefined, record: rec('failed'), secrets: {}, eventsFile: file, now: () => new Date() });
  await settled();
  assert.equal(r.got.length, 0);
  assert.deepEqual(await events(file), []);
});

test('a process that ends (as runner exec does, setting its exit code) stays for the last attempt, and no longer than the deadline', async () => {
  const { spawn } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const notifier = fileURLToPath(new URL('../../src/notify/notifier.js', import.meta.url));
  const run = async (url: string, limits: object) => {
    const file = await eventsFile();
    const script = `import { notifyRunEnd } from ${JSON.stringify(notifier)};
notifyRunEnd({ notify: { team: { webhook: ${JSON.stringify(url)}, on: ['failed'], format: 'json' } }, record: { runId: 'r1', pipeline: 'p', project: '/p', status: 'failed', steps: [], branch: null, error: null },
  secrets: {}, eventsFile: ${JSON.stringify(file)}, now: () => new Date(), limits: ${JSON.stringify(limits)} });
process.exitCode = 1;`;
    const started = Date.now();
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'inherit' });
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    return { code, took: Date.now() - started, events: await events(file) };
  };
  const flaky = await receiver((n) => (n === 1 ? 500 : 204));
  const a = await run(flaky.url, { attempts: 4, firstPauseMs: 300, attemptMs: 2000, deadlineMs: 5000 });
  assert.equal(a.code, 1);
  assert.equal(flaky.got.length, 2);
  assert.deepEqual(a.events.map((e) => e.message), ['notify_failed', 'notify_sent']);
  const down = await receiver(() => 'hang');
  const b = await run(down.url, { attempts: 4, firstPauseMs: 100, attemptMs: 400, deadlineMs: 1000 });
  assert.equal(b.code, 1);
  assert.ok(b.took < 3000, `exited after ${b.took} ms, deadline 1000 ms`);
  assert.equal(b.events.at(-1)!.final, true);
});

const GATE = { step: 'approve-plan', prompt: 'Read PLAN.md; approve to implement it.', deadline: new Date('2030-01-04T04:00:00Z') };

test("a run at a gate tells the entries whose on: names awaiting_approval, signed, with the gate's step, prompt, deadline and how to approve; the event names the step", async () => {
  const team = await receiver();
  const ends = await receiver();
  const file = await eventsFile();
  notifyRunEvent({
    notify: {
      team: { webhook: team.url, secret: 'WEBHOOK_SECRET', on: ['awaiting_approval', 'failed'], format: 'json' },
      ends: { webhook: ends.url, on: ['failed', 'succeeded', 'rejected'], format: 'json' },
    },
    event: 'awaiting_approval',
    record: rec('awaiting_approval'),
    secrets: { WEBHOOK_SECRET: SECRET },
    eventsFile: file,
    now: () => new Date(),
    extra: GATE,
    limits: FAST,
  });
  await settled();
  assert.equal(ends.got.length, 0);
  assert.equal(team.got.length, 1);
  const g = team.got[0]!;
  assert.equal(verifySignature(SECRET, { timestamp: g.headers['x-runner-timestamp'] as string, signature: g.headers['x-runner-signature'] as string }, g.body, new Date()), 'ok');
  const body = JSON.parse(g.body) as { status: string; gate: { step: string; prompt: string; deadline: string; approve: { command: string; api: string } } };
  assert.equal(body.status, 'awaiting_approval');
  assert.deepEqual(
    [body.gate.step, body.gate.prompt, body.gate.deadline, body.gate.approve.command, body.gate.approve.api],
    ['approve-plan', 'Read PLAN.md; approve to implement it.', '2030-01-04T04:00:00.000Z', 'runner approve r1', 'POST /api/runs/r1/approve'],
  );
  const ev = await events(file);
  assert.deepEqual(ev.map((e) => [e.message, e.notify, e.status, e.step, e.httpStatus]), [['notify_sent', 'team', 'awaiting_approval', 'approve-plan', 204]]);
});

test("an approval step's own notify: [names] tells those entries whatever their on: says, and no other", async () => {
  const team = await receiver();
  const lead = await receiver();
  const all = await receiver();
  const file = await eventsFile();
  notifyRunEvent({
    notify: {
      team: { webhook: team.url, on: ['failed'], format: 'json' },
      lead: { webhook: lead.url, on: ['succeeded'], format: 'slack' },
      all: { webhook: all.url, on: ['awaiting_approval'], format: 'json' },
    },
    only: ['team', 'lead'],
    event: 'awaiting_approval',
    record: rec('awaiting_approval'),
    secrets: {},
    eventsFile: file,
    now: () => new Date(),
    extra: GATE,
    limits: FAST,
  });
  await settled();
  assert.deepEqual([team.got.length, lead.got.length, all.got.length], [1, 1, 0]);
  assert.match((JSON.parse(lead.got[0]!.body) as { text: string }).text, /awaiting approval at approve-plan .*Approve: runner approve r1 \(or POST \/api\/runs\/r1\/approve\)/);
});

test('a rejected run tells the entries whose on: names rejected; a run stopped at a gate (as executeRun ends it) tells of the gate, to the step\'s own entries', async () => {
  const team = await receiver();
  const lead = await receiver();
  const file = await eventsFile();
  const notify = {
    team: { webhook: team.url, on: ['rejected', 'awaiting_approval'] as Array<'rejected' | 'awaiting_approval'>, format: 'json' as const },
    lead: { webhook: lead.url, on: ['succeeded'] as Array<'succeeded'>, format: 'json' as const },
  };
  const waiting = rec('awaiting_approval');
  waiting.gate = { id: 'approve-plan', name: 'approve-plan', prompt: 'Read PLAN.md.', since: '2030-01-02T03:04:05.000Z', deadline: '2030-01-04T03:04:05.000Z' };
  notifyRunEnd({ notify, record: waiting, secrets: {}, eventsFile: file, now: () => new Date(), limits: FAST });
  await settled();
  assert.deepEqual([team.got.length, lead.got.length], [1, 0], 'a gate without notify: tells the entries whose on: names awaiting_approval');
  const body = JSON.parse(team.got[0]!.body) as { status: string; gate: { step: string; prompt: string; deadline: string } };
  assert.deepEqual([body.status, body.gate.step, body.gate.prompt, body.gate.deadline], ['awaiting_approval', 'approve-plan', 'Read PLAN.md.', '2030-01-04T03:04:05.000Z']);
  waiting.gate = { ...waiting.gate, notify: ['lead'] };
  notifyRunEnd({ notify, record: waiting, secrets: {}, eventsFile: file, now: () => new Date(), limits: FAST });
  await settled();
  assert.deepEqual([team.got.length, lead.got.length], [1, 1], "a gate's own notify: [lead] tells lead alone");
  // a record at awaiting_approval without its gate is not told of (nothing to say where it waits)
  notifyRunEnd({ notify, record: rec('awaiting_approval'), secrets: {}, eventsFile: file, now: () => new Date(), limits: FAST });
  notifyRunEnd({ notify, record: rec('rejected'), secrets: {}, eventsFile: file, now: () => new Date(), limits: FAST });
  await settled();
  assert.equal(team.got.length, 2);
  assert.equal((JSON.parse(team.got[1]!.body) as { status: string }).status, 'rejected');
});

test('notifyRunEvent never throws and returns at once: a receiver down, a webhook that is not a URL, a deadline that is not a time, a missing secret', async () => {
  const down = await receiver(() => 'hang');
  const file = await eventsFile();
  const started = Date.now();
  assert.doesNotThrow(() =>
    notifyRunEvent({
      notify: {
        down: { webhook: down.url, secret: 'UNSET', on: ['awaiting_approval'], format: 'slack' },
        broken: { webhook: 'not a url', on: ['awaiting_approval'], format: 'json' },
      },
      event: 'awaiting_approval',
      record: rec('awaiting_approval'),
      secrets: {},
      eventsFile: file,
      now: () => new Date(),
      extra: { step: 'gate', prompt: 'Look.', deadline: 'soon' },
      limits: FAST,
    }),
  );
  assert.ok(Date.now() - started < 50, 'notifyRunEvent waited on a receiver');
  await settled();
  const ev = await events(file);
  assert.ok(ev.some((e) => e.notify === 'broken' && e.final === true), JSON.stringify(ev));
  assert.ok(ev.some((e) => e.notify === 'down' && e.final === true), JSON.stringify(ev));
  assert.equal(down.got.length >= 1, true);
});
