/**
 * A step that prints up to its log cap (100 MiB) cannot take down whoever reads
 * its log: runner serve with one fast and four slow readers stays bounded and
 * keeps answering; runner logs stays bounded. Short lines (10 bytes) and long
 * ones (1000 bytes), each a whole 100 MiB log, written by a real container.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, execPipeline, pipelineYaml, projectsForThisFile, serveFolder, watchPeakMemory, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const MiB = 1024 * 1024;

async function bigLogRun(f: Fixture): Promise<string> {
  const file = await writePipeline(
    f,
    // 10 million lines go through the runner: on a busy machine that took longer than the default 2 minutes,
    // and the step's time is not what this file tests
    pipelineYaml(`  - id: short
    timeout: 15m
    run: yes aaaaaaaaa | head -c ${100 * MiB}
  - id: long
    timeout: 15m
    run: yes "$(printf '%0999d' 0)" | head -c ${100 * MiB}
`),
  );
  const r = await execPipeline(f, file, [], { tailOnly: true });
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  for (const step of ['short', 'long']) {
    const size = (await stat(path.join(f.home, 'runs', r.json.runId, 'steps', `${step}.log`))).size;
    assert.ok(size >= 99 * MiB, `${step}.log is ${size} bytes`);
  }
  return r.json.runId;
}

/** An SSE reader: fast reads to the end; slow reads one chunk and then stops reading (its socket stays open). */
function reader(url: string, kind: 'fast' | 'slow'): { done: Promise<number>; close: () => void } {
  let close = () => undefined as void;
  const done = new Promise<number>((resolve, reject) => {
    const req = http.get(url, (res) => {
      let bytes = 0;
      let tail = '';
      res.on('data', (b: Buffer) => {
        bytes += b.length;
        if (kind === 'slow') res.pause();
        tail = (tail + b.toString('latin1')).slice(-200);
        if (/event: end/.test(tail)) resolve(bytes);
      });
      res.on('end', () => resolve(bytes));
      res.on('error', (err) => (kind === 'slow' ? resolve(bytes) : reject(err)));
    });
    req.on('error', (err) => (kind === 'slow' ? resolve(0) : reject(err)));
    close = () => {
      resolve(0);
      req.destroy();
    };
  });
  return { done, close };
}

async function timedHealthz(base: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${base}/healthz`);
  await res.text();
  assert.equal(res.status, 200);
  return performance.now() - t0;
}

test('runner serve: one fast and four slow readers of a 100 MiB log, short lines and long', { timeout: 600_000 }, async () => {
  const f = await fixture();
  const runId = await bigLogRun(f);
  const s = await serveFolder(f, {}, '127.0.0.1:0', { args: ['--project', f.root] }); // serves the runs of projects under --project (docs/operations.md)
  const mem = watchPeakMemory(s.child.pid!);
  try {
    const url = `${s.base}/api/runs/${runId}/log`;
    const slow = [1, 2, 3, 4].map(() => reader(url, 'slow'));
    const fast = reader(url, 'fast');
    const latencies: number[] = [];
    let reading = true;
    const probe = (async () => {
      while (reading) {
        latencies.push(await timedHealthz(s.base));
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const t0 = performance.now();
    const bytes = await fast.done;
    const took = (performance.now() - t0) / 1000;
    reading = false;
    await probe;
    // The slow ones are still there, still holding their streams open.
    const listRes = await fetch(`${s.base}/api/runs`);
    assert.equal(listRes.status, 200);
    for (const r of slow) r.close();
    mem.stop();
    const peakMb = mem.peak() / MiB;
    const worst = Math.max(...latencies);
    console.log(
      `# serve reading a 2 × 100 MiB log to 1 fast + 4 slow clients: peak RSS ${peakMb.toFixed(0)} MB; ` +
        `fast client got ${(bytes / MiB).toFixed(0)} MiB of events in ${took.toFixed(1)} s; ` +
        `/healthz ${latencies.length} probes, median ${median(latencies).toFixed(1)} ms, worst ${worst.toFixed(1)} ms`,
    );
    assert.ok(bytes > 200 * MiB, `the fast reader got the whole log (${bytes} bytes)`);
    assert.ok(peakMb > 0 && peakMb < 300, `serve's peak RSS ${peakMb.toFixed(0)} MB`);
    // Never held for the read: a server that read the log in one go would hold /healthz for the whole read, which
    // takes longer the busier the machine is; 2 s, or a quarter of the read on a machine slow enough to need it.
    assert.ok(worst < Math.max(2000, (took * 1000) / 4), `/healthz took up to ${worst.toFixed(0)} ms while the log was read (in ${took.toFixed(1)} s)`);
  } finally {
    mem.stop();
    s.child.kill('SIGTERM');
    await s.exited;
  }

  // runner logs on the same run, into a pipe read as it comes
  const peak = await new Promise<{ mb: number; bytes: number }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'logs', runId, '--home', f.home], { stdio: ['ignore', 'pipe', 'pipe'] });
    const m = watchPeakMemory(child.pid!);
    let bytes = 0;
    let err = '';
    child.stdout.on('data', (b: Buffer) => (bytes += b.length));
    child.stderr.on('data', (b: Buffer) => (err += b));
    child.on('error', reject);
    child.on('close', (code) => {
      m.stop();
      if (code !== 0) reject(new Error(`runner logs exited ${code}: ${err}`));
      else resolve({ mb: m.peak() / MiB, bytes });
    });
  });
  console.log(`# runner logs on the same run: peak RSS ${peak.mb.toFixed(0)} MB for ${(peak.bytes / MiB).toFixed(0)} MiB printed`);
  assert.ok(peak.bytes > 200 * MiB);
  assert.ok(peak.mb > 0 && peak.mb < 150, `runner logs peak RSS ${peak.mb.toFixed(0)} MB`);
});

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}
