/** One watcher per run, on a real server on 127.0.0.1 with real log files: many followers, one read of the record a tick. */
import assert from 'node:assert/strict';
import { appendFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { LogWatches } from '../../src/serve/log-watch.js';

function follower(base: string) {
  const lines: string[] = [];
  let end: string | undefined;
  let partial = '';
  const req = http.get(`${base}/log`, { agent: false }, (res) => {
    res.setEncoding('utf8');
    res.on('data', (s: string) => {
      partial += s;
      const events = partial.split('\n\n');
      partial = events.pop() ?? '';
      for (const e of events) {
        if (e.startsWith('data: ')) lines.push((JSON.parse(e.slice(6)) as { line: string }).line);
        else if (e.startsWith('event: end\n')) end = (JSON.parse(e.split('\ndata: ')[1]!) as { status: string }).status;
      }
    });
  });
  req.on('error', () => undefined);
  return { lines, end: () => end };
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('fifty followers of one run share one watcher: the record is read once a tick, every follower gets every line once, a late one from the start', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'log-watch-'));
  const steps = path.join(root, 'steps');
  await mkdir(steps);
  let status = 'running';
  let reads = 0;
  const watches = new LogWatches({
    record: async () => {
      reads++;
      return { runId: 'r', pipeline: 'p', status, steps: [], current: { id: 'talk' } } as never;
    },
    stepsDir: () => steps,
    stallMs: 5000,
    tickMs: 50,
  });
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    void watches.follow('r', res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    await appendFile(path.join(steps, 'talk.log'), 'line 1\n');
    const many = Array.from({ length: 50 }, () => follower(base));
    await until('the first line everywhere', () => many.every((f) => f.lines.length === 1));
    assert.equal(watches.size(), 1, 'one watcher for the run');
    const t0 = Date.now();
    reads = 0;
    for (let i = 2; i <= 20; i++) {
      await appendFile(path.join(steps, 'talk.log'), `line ${i}\n`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const late = follower(base);
    await until('every line everywhere', () => [...many, late].every((f) => f.lines.length === 20));
    const ticks = (Date.now() - t0) / 50;
    assert.ok(reads <= ticks + 2, `${reads} reads of the record in ${ticks.toFixed(1)} ticks, for 51 followers`);
    status = 'succeeded';
    await until('the end event everywhere', () => [...many, late].every((f) => f.end() === 'succeeded'));
    const want = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`);
    for (const f of [...many, late]) assert.deepEqual(f.lines, want);
    await until('the watcher to go', () => watches.size() === 0);
  } finally {
    server.closeAllConnections();
    server.close();
    await rm(root, { recursive: true });
  }
});
