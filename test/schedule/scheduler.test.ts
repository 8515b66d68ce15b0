/** The scheduler with an injected clock and timers: no real time passes. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Scheduler, type ScheduledPipeline } from '../../src/schedule/scheduler.js';

class FakeTime {
  now = new Date('2026-03-28T23:00:00Z').getTime();
  private timers: Array<{ at: number; fn: () => void; live: boolean }> = [];
  setTimer = (ms: number, fn: () => void) => {
    const t = { at: this.now + ms, fn, live: true };
    this.timers.push(t);
    return { cancel: () => (t.live = false) };
  };
  /** Moves time forward, firing every timer that falls due, in order. */
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.live && t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.now = Math.max(this.now, due.at);
      due.live = false;
      due.fn();
      await new Promise((r) => setImmediate(r));
    }
    this.now = end;
  }
}

function harness(maxConcurrent = 4, last: Record<string, Date> = {}) {
  const time = new FakeTime();
  const started: Array<{ pipeline: string; why: string; at: string; runId: string; startedBy?: unknown }> = [];
  let ids = 0;
  const finishers: Array<() => void> = [];
  const logs: string[] = [];
  const s = new Scheduler({
    now: () => new Date(time.now),
    setTimer: time.setTimer,
    newRunId: () => `run-${++ids}`,
    start: ({ pipeline, why, runId, startedBy }) => {
      started.push({ pipeline, why, at: new Date(time.now).toISOString(), runId, ...(startedBy ? { startedBy } : {}) });
      return new Promise<void>((r) => finishers.push(r));
    },
    maxConcurrent,
    lastFire: (p, i) => last[`${p}#${i}`],
    recordFire: () => undefined,
    log: (m) => logs.push(m),
  });
  return { time, s, started, finishers, logs };
}

const every = (name: string, cron: string, overlap: 'skip' | 'queue' | 'allow' = 'skip', extra = {}): ScheduledPipeline => ({
  name,
  entries: [{ cron, overlap, catchup: false, ...extra }],
});

test('fires at its times across the DST change, in its time zone', async () => {
  const h = harness();
  h.s.setPipelines([{ name: 'digest', entries: [{ cron: '30 2 * * *', timezone: 'Europe/Berlin', overlap: 'allow', catchup: false }] }]);
  for (let i = 0; i < 3; i++) {
    await h.time.advance(24 * 3_600_000);
    h.finishers.splice(0).forEach((f) => f());
  }
  assert.deepEqual(h.started.map((s) => s.at), ['2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']);
});

test('overlap: skip drops a fire while the run goes; queue runs it once after; allow runs both', async () => {
  for (const [overlap, want] of [['skip', 1], ['queue', 2], ['allow', 3]] as const) {
    const h = harness();
    h.s.setPipelines([every('p', '* * * * *', overlap)]);
    await h.time.advance(3 * 60_000); // three fires while the first run is still going
    const duringRun = h.started.length;
    h.finishers.splice(0).forEach((f) => f());
    await new Promise((r) => setImmediate(r));
    assert.equal(h.started.length, want, `${overlap}: ${duringRun} during, ${h.started.length} in all; ${h.logs.join(' | ')}`);
  }
});

test('a global cap queues runs of different pipelines and starts them as others end', async () => {
  const h = harness(1);
  h.s.setPipelines([every('a', '0 * * * *'), every('b', '0 * * * *')]);
  await h.time.advance(3_600_000);
  assert.deepEqual(h.started.map((s) => s.pipeline), ['a']);
  assert.equal(h.s.queueLength(), 1);
  h.finishers.shift()!();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(h.started.map((s) => s.pipeline), ['a', 'b']);
});

test('catch-up: one run at start for missed fires only when the entry asks; then the normal schedule', async () => {
  const last = { 'c#0': new Date('2026-03-20T00:00:00Z'), 'n#0': new Date('2026-03-20T00:00:00Z') };
  const h = harness(4, last);
  h.s.setPipelines([every('c', '0 * * * *', 'skip', { catchup: true }), every('n', '0 * * * *')]);
  assert.deepEqual(h.started.map((s) => [s.pipeline, s.why]), [['c', 'catchup']], 'one run, not a storm; none without catchup');
  h.finishers.splice(0).forEach((f) => f());
  await new Promise((r) => setImmediate(r));
  await h.time.advance(3_600_000);
  assert.deepEqual(h.started.map((s) => s.pipeline).sort(), ['c', 'c', 'n']);
});

test('stop: no fire after it', async () => {
  const h = harness();
  h.s.setPipelines([every('p', '* * * * *', 'allow')]);
  h.s.stop();
  await h.time.advance(5 * 60_000);
  assert.equal(h.started.length, 0);
});

test('a trigger starts a run at once, under the cap, whatever the schedule', async () => {
  const h = harness(1);
  h.s.setPipelines([every('p', '0 6 * * *'), every('q', '0 6 * * *')]);
  assert.equal(h.s.trigger('p'), 'run-1');
  assert.equal(h.s.trigger('q'), 'run-2');
  assert.equal(h.s.trigger('nope'), undefined);
  assert.deepEqual(h.started.map((s) => [s.pipeline, s.why, s.runId]), [['p', 'trigger', 'run-1']]);
  assert.deepEqual(h.s.queued(), [{ pipeline: 'q', why: 'trigger', runId: 'run-2' }]);
  h.finishers.shift()!();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(h.started.map((s) => s.pipeline), ['p', 'q']);
  assert.deepEqual(h.s.queued(), []);
});

test('a queued run can be dropped by its id before it starts', async () => {
  const h = harness(1);
  h.s.setPipelines([every('p', '0 6 * * *'), every('q', '0 6 * * *')]);
  h.s.trigger('p');
  const waiting = h.s.trigger('q')!;
  assert.equal(h.s.dequeue('run-1'), undefined, 'a started run is not in the queue');
  assert.equal(h.s.dequeue(waiting)?.runId, waiting);
  assert.equal(h.s.dequeue(waiting), undefined);
  h.finishers.shift()!();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(h.started.map((s) => s.pipeline), ['p'], 'the dropped run never starts');
  assert.equal(h.s.queueLength(), 0);
});

test('what started each run: a schedule fire names its cron; a trigger says who asked', async () => {
  const h = harness();
  h.s.setPipelines([every('p', '*/5 * * * *', 'allow')]);
  await h.time.advance(5 * 60_000);
  h.s.trigger('p', { topic: 'x' }, { via: 'dashboard', from: '127.0.0.1' });
  assert.deepEqual(
    h.started.map((s) => [s.why, s.startedBy]),
    [
      ['schedule', { via: 'schedule', schedule: '*/5 * * * *' }],
      ['trigger', { via: 'dashboard', from: '127.0.0.1' }],
    ],
  );
});
