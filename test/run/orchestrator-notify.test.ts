/** The run's end tells its notify: entries, from the orchestrator every door runs through, without waiting on them (fake engine). */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { RunnerError } from '../../src/common/errors.js';
import { settled } from '../../src/notify/notifier.js';
import { verifySignature } from '../../src/notify/sign.js';
import { coreProjects, FakeEngine, pipeline, runOn } from '../fixtures/core-run.js';
import { receiver } from '../notify/receiver.js';

const project = coreProjects();
const SECRET = 'hook-secret-5d1e';

const notifyTop = (url: string) => `secrets: [WEBHOOK_SECRET]
notify:
  team:
    webhook: ${url}
    secret: WEBHOOK_SECRET
    on: [failed, succeeded]`;

test("a run's end is sent signed to its notify: entry, and the run does not wait for the receiver's answer", async () => {
  const f = await project();
  const r = await receiver(() => 'hang');
  const file = await pipeline(f, '  - id: a\n    run: a', notifyTop(r.url));
  const engine = new FakeEngine().step('a', () => 3);
  const { record } = await runOn(engine, f, file, { secrets: { WEBHOOK_SECRET: SECRET } });
  assert.equal(record.status, 'failed');
  // the run came back while its notification is held unanswered
  await waitFor(() => r.got.length === 1);
  const g = r.got[0]!;
  assert.equal(verifySignature(SECRET, { timestamp: g.headers['x-runner-timestamp'] as string, signature: g.headers['x-runner-signature'] as string }, g.body, new Date()), 'ok');
  const body = JSON.parse(g.body) as Record<string, unknown>;
  assert.deepEqual([body.runId, body.pipeline, body.status, body.branch, body.link], [record.runId, 'core', 'failed', record.branch, `/runs/${record.runId}`]);
  // the receiver fails it, then takes the next attempt
  r.release(500);
  await waitFor(() => r.got.length === 2);
  r.release(204);
  await settled();
  const events = (await readFile(path.join(f.home, 'runs', record.runId, 'events.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const sent = events.filter((e) => String(e.message).startsWith('notify_'));
  assert.deepEqual(sent.map((e) => [e.message, e.notify, e.httpStatus]), [['notify_failed', 'team', 500], ['notify_sent', 'team', 204]]);
  assert.ok(!JSON.stringify(events).includes(SECRET));
});

test('a notify secret that is not set refuses the run before it starts, as a step secret does', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: a\n    run: a', notifyTop('http://127.0.0.1:9/hook'));
  await assert.rejects(runOn(new FakeEngine().step('a', () => 0), f, file), (e: unknown) => e instanceof RunnerError && e.code === 'secret_missing' && /WEBHOOK_SECRET/.test(e.message));
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}
