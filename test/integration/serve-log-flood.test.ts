/**
 * runner serve under a flood of live-log followers, for real: the CLI as a
 * child process on 127.0.0.1, a running run whose step keeps printing, and
 * thousands of sockets from many loopback addresses that ask for its log and
 * never read it. /healthz must stay fast, the caps must answer 429 (one
 * address) and 503 (all), the server's fds and memory stay bounded, a stalled
 * follower is closed after the bound, and a real follower still gets the log.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { IMAGE, projectsForThisFile, runCli, serveFolder, until, watchPeakMemory, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** The caps the server uses when nothing is said (README: runner serve's API). */
const DEFAULT_MAX_STREAMS = 256;
const DEFAULT_MAX_PER_CLIENT = 32;

function pipelineFile(f: Fixture, name: string, run: string): string {
  return `version: 1
name: ${name}
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE}, timeout: 10m }
steps:
  - id: talk
    run: |
${run
  .trim()
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
`;
}

/** A follower that reads everything: the SSE data lines as they come, and the end event. */
function follow(base: string, runId: string, opts: { readEvery?: number } = {}) {
  const lines: Array<{ step: string; line: string }> = [];
  let end: string | undefined;
  let status: number | undefined;
  let partial = '';
  let chunks = 0;
  const req = http.get(`${base}/api/runs/${runId}/log`, { agent: false }, (res) => {
    status = res.statusCode;
    res.setEncoding('utf8');
    res.on('data', (s: string) => {
      partial += s;
      const events = partial.split('\n\n');
      partial = events.pop() ?? '';
      for (const e of events) {
        if (e.startsWith('data: ')) lines.push(JSON.parse(e.slice(6)));
        else if (e.startsWith('event: end\n')) end = JSON.parse(e.split('\ndata: ')[1]!).status;
      }
      // a slow reader: pauses now and then, so the server must wait for it
      if (opts.readEvery && ++chunks % 10 === 0) {
        res.pause();
        setTimeout(() => res.resume(), opts.readEvery);
      }
    });
  });
  req.on('error', () => undefined);
  return { lines, end: () => end, status: () => status, close: () => req.destroy() };
}

/**
 * A socket from `localAddress` that asks for the run's log and never reads
 * it: it takes the first bytes the server sends (the status line), then
 * stops reading for good. Resolves with the status, or 0 when none came.
 */
function openSilent(port: number, localAddress: string, runId: string, held: net.Socket[]): Promise<number> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port, localAddress });
    held.push(sock);
    const timer = setTimeout(() => resolve(0), 20_000);
    sock.once('connect', () => sock.write(`GET /api/runs/${runId}/log HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
    sock.once('data', (b) => {
      sock.pause();
      clearTimeout(timer);
      resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(b.toString('latin1'))?.[1] ?? 0));
    });
    sock.on('error', () => {
      clearTimeout(timer);
      resolve(0);
    });
  });
}

/** A refused follower's whole answer (status line, headers, body). */
function refusal(port: number, localAddress: string, runId: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const sock = net.connect({ host: '127.0.0.1', port, localAddress }, () => sock.write(`GET /api/runs/${runId}/log HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
    sock.setEncoding('latin1');
    sock.on('data', (s: string) => {
      got += s;
      if (/^HTTP\/1\.1 200 /.test(got)) sock.destroy(); // admitted: not a refusal
    });
    sock.on('close', () => resolve(got));
    sock.on('error', reject);
  });
}

/** Milliseconds each of `n` sequential GET /healthz took, each on its own connection. */
async function healthz(base: string, n: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await new Promise<void>((resolve, reject) => {
      http
        .get(`${base}/healthz`, { agent: false }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`/healthz answered ${res.statusCode}`))));
        })
        .on('error', reject);
    });
    times.push(performance.now() - t);
  }
  return times;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

/** The server process's open fds, resident memory (bytes) and CPU time so far (seconds). */
function proc(pid: number): { fds: number; rss: number; cpu: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
  const ticks = 100; // USER_HZ on Linux
  return {
    fds: readdirSync(`/proc/${pid}/fd`).length,
    rss: Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024,
    cpu: (Number(stat[11]) + Number(stat[12])) / ticks,
  };
}

/** How many files this process may open: the flood needs one per socket. */
function openFileLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return !m || m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

/**
 * The flood: a node process that opens, from each address of `plan`, so many
 * sockets asking for the run's log (250 at a time), takes the status line of
 * each answer and never reads again. It says what it got once all are open,
 * then holds them until stopped.
 */
async function startFlood(f: Fixture, port: number, runId: string, plan: Array<[string, number]>) {
  const script = path.join(f.root, 'flood.mjs');
  await writeFile(
    script,
    `import net from 'node:net';
const [port, runId, plan] = [Number(process.argv[2]), process.argv[3], JSON.parse(process.argv[4])];
const open = (localAddress) => new Promise((resolve) => {
  const sock = net.connect({ host: '127.0.0.1', port, localAddress });
  const timer = setTimeout(() => resolve(0), 20000);
  sock.once('connect', () => sock.write('GET /api/runs/' + runId + '/log HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n'));
  sock.once('data', (b) => { sock.pause(); clearTimeout(timer); resolve(Number(/^HTTP\\/1\\.1 (\\d{3})/.exec(b.toString('latin1'))?.[1] ?? 0)); });
  sock.on('error', () => { clearTimeout(timer); resolve(0); });
});
const sources = plan.flatMap(([a, n]) => Array.from({ length: n }, () => a));
// interleaved, as many clients at once would be
const order = sources.map((a, i) => [a, (i * 7919) % sources.length]).sort((x, y) => x[1] - y[1]).map(([a]) => a);
const statuses = {};
const t0 = performance.now();
for (let i = 0; i < order.length; i += 250) {
  for (const st of await Promise.all(order.slice(i, i + 250).map(open))) statuses[st] = (statuses[st] ?? 0) + 1;
}
process.stdout.write(JSON.stringify({ statuses, ms: performance.now() - t0 }) + '\\n');
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
`,
  );
  const child = spawn(process.execPath, [script, String(port), runId, JSON.stringify(plan)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const opened = new Promise<{ statuses: Record<string, number>; ms: number }>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b) => {
      out += b;
      if (out.includes('\n')) resolve(JSON.parse(out));
    });
    child.on('exit', (code) => reject(new Error(`the flood process exited ${code} before it said what it got`)));
  });
  return { opened, stop: () => child.kill('SIGKILL') };
}

const MB = 1024 * 1024;

async function runningRun(base: string, pipeline: string): Promise<string> {
  const trig = await fetch(`${base}/api/pipelines/${pipeline}/runs`, { method: 'POST' });
  assert.equal(trig.status, 202);
  const { runId } = (await trig.json()) as { runId: string };
  await until('the run to be running', async () => (((await (await fetch(`${base}/api/runs/${runId}`)).json()) as { status: string }).status === 'running' ? true : undefined), 60_000);
  return runId;
}

test('4,000 log followers that never read: /healthz stays fast, the caps answer 429 and 503, fds and memory stay bounded, a real follower gets the log', { timeout: 300_000 }, async (t) => {
  const f = await fixture();
  const s = await serveFolder(f, { 'ticks.yaml': pipelineFile(f, 'ticks', 'i=0\nwhile true; do i=$((i+1)); echo "tick $i"; sleep 0.2; done') }, '127.0.0.1:0');
  const port = Number(new URL(s.base).port);
  const pid = s.child.pid!;
  let attacker: Awaited<ReturnType<typeof startFlood>> | undefined;
  try {
    const runId = await runningRun(s.base, 'ticks');
    const reader = follow(s.base, runId);
    await until('the first line', async () => (reader.lines.length ? true : undefined));
    const quiet = await healthz(s.base, 30);
    const before = proc(pid);

    // One greedy address asks 1,000 times; 100 more ask 30 times each (below the per-address cap, past the total).
    // The flood is a process of its own, as an attacker is: the times measured here are the server's, not its.
    const flood = Math.min(4000, openFileLimit() - 1500);
    assert.ok(flood >= 2000, `ulimit -n is ${openFileLimit()}: the flood needs at least 3,500 open files`);
    const greedy = Math.round(flood / 4);
    const plan = [['127.0.0.2', greedy], ...Array.from({ length: 100 }, (_, i) => [`127.0.1.${i + 1}`, Math.round((flood - greedy) / 100)])];
    attacker = await startFlood(f, port, runId, plan as Array<[string, number]>);
    const during: number[] = [];
    let flooding = true;
    const sampler = (async () => {
      while (flooding) during.push(...(await healthz(s.base, 1)));
    })();
    const opened = await attacker.opened;
    flooding = false;
    await sampler;
    const statuses = new Map(Object.entries(opened.statuses).map(([k, v]) => [Number(k), v]));
    const floodMs = opened.ms;

    // The flood holds its streams open and never reads; the run keeps printing.
    const cpu0 = proc(pid).cpu;
    const w0 = performance.now();
    const under = await healthz(s.base, 60);
    await new Promise((r) => setTimeout(r, 3000));
    const cpuPct = ((proc(pid).cpu - cpu0) / ((performance.now() - w0) / 1000)) * 100;
    const held1 = proc(pid);
    const ticksBefore = reader.lines.length;
    await until('more lines for the real follower', async () => (reader.lines.length > ticksBefore + 3 ? true : undefined), 15_000);

    const figures = {
      flood,
      floodSeconds: +(floodMs / 1000).toFixed(1),
      statuses: Object.fromEntries(statuses),
      healthzQuietMedianMs: +quantile(quiet, 0.5).toFixed(1),
      healthzDuringOpeningMedianMs: +quantile(during, 0.5).toFixed(1),
      healthzDuringOpeningP95Ms: +quantile(during, 0.95).toFixed(1),
      healthzHeldMedianMs: +quantile(under, 0.5).toFixed(1),
      healthzHeldP95Ms: +quantile(under, 0.95).toFixed(1),
      cpuPercentHeld: Math.round(cpuPct),
      fdsBefore: before.fds,
      fdsHeld: held1.fds,
      rssBeforeMB: Math.round(before.rss / MB),
      rssHeldMB: Math.round(held1.rss / MB),
    };
    t.diagnostic(JSON.stringify(figures));
    console.log(`figures: ${JSON.stringify(figures)}`);

    // Fast as the machine allows: under 100 ms, or within 5 times what it answered before the flood on a machine
    // busy enough to slow even that (the promise is that the flood does not hold it, not the machine's speed).
    const fast = Math.max(100, 5 * quantile(quiet, 0.5));
    assert.ok(quantile(under, 0.5) < fast, `/healthz median ${quantile(under, 0.5).toFixed(1)} ms with the flood held (under ${fast.toFixed(0)} ms wanted)`);
    assert.ok(quantile(during, 0.5) < fast, `/healthz median ${quantile(during, 0.5).toFixed(1)} ms while the flood opened (under ${fast.toFixed(0)} ms wanted)`);
    assert.equal(statuses.get(0) ?? 0, 0, 'every follower got an answer');
    assert.equal(statuses.get(200), DEFAULT_MAX_STREAMS - 1, 'the total cap, the real follower counted');
    assert.ok((statuses.get(429) ?? 0) >= greedy - DEFAULT_MAX_PER_CLIENT, 'the greedy address is refused past its cap');
    assert.ok((statuses.get(503) ?? 0) > 0, 'the others are refused past the total');
    assert.ok(held1.fds < before.fds + DEFAULT_MAX_STREAMS + 64, `${held1.fds} fds held (${before.fds} before)`);
    assert.ok(held1.rss < before.rss + 64 * MB, `RSS ${Math.round(held1.rss / MB)} MB held (${Math.round(before.rss / MB)} MB before)`);

    const perClient = await refusal(port, '127.0.0.2', runId);
    assert.match(perClient, /^HTTP\/1\.1 429 /);
    assert.match(perClient, /^retry-after: \d+\r$/im);
    assert.match(perClient, /127\.0\.0\.2 already follows 32 live logs, the most one address may .* close one .* and try again/);
    const total = await refusal(port, '127.0.2.1', runId);
    assert.match(total, /^HTTP\/1\.1 503 /);
    assert.match(total, /^retry-after: \d+\r$/im);
    assert.match(total, /already serves 256 live logs, the most it takes \(--max-log-streams\).* try again/);

    // The flood goes: its places are free again.
    attacker.stop();
    await until('the places to be free', async () => (/^HTTP\/1\.1 200 /.test(await refusal(port, '127.0.2.1', runId)) ? true : undefined), 15_000);
    assert.equal((await fetch(`${s.base}/api/runs/${runId}/cancel`, { method: 'POST' })).status, 202);
    await until('the end event', async () => reader.end(), 30_000);
    assert.equal(reader.end(), 'canceled');
    const ticks = reader.lines.map((l) => Number(/^tick (\d+)$/.exec(l.line)?.[1]));
    assert.deepEqual(ticks, ticks.map((_, i) => i + 1), 'the real follower got every line, in order, once');
  } finally {
    attacker?.stop();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out().slice(-4000));
});

test('followers that stop reading a 30 MB log are cut after --log-stall and free their places; a slow reader and a late one get every line once, in order', { timeout: 240_000 }, async (t) => {
  const f = await fixture();
  // 30,000 numbered lines of 1 KB at once, then one more every 0.2 s
  const loud = 'seq 1 30000 | awk \'{printf "%06d %0990d\\n", $1, 0}\'\nn=30000\nwhile true; do n=$((n+1)); printf "%06d tick\\n" $n; sleep 0.2; done';
  const s = await serveFolder(f, { 'loud.yaml': pipelineFile(f, 'loud', loud) }, '127.0.0.1:0', { args: ['--max-log-streams-per-client', '20', '--log-stall', '3s'] });
  const port = Number(new URL(s.base).port);
  const pid = s.child.pid!;
  const memory = watchPeakMemory(pid);
  const held: net.Socket[] = [];
  try {
    const runId = await runningRun(s.base, 'loud');
    const before = proc(pid);
    const silent = await Promise.all(Array.from({ length: 20 }, () => openSilent(port, '127.0.0.3', runId, held)));
    assert.deepEqual(new Set(silent), new Set([200]), 'twenty followers from one address are let in');
    assert.match(await refusal(port, '127.0.0.3', runId), /^HTTP\/1\.1 429 /, 'the twenty-first is refused');
    const slow = follow(s.base, runId, { readEvery: 20 });
    await new Promise((r) => setTimeout(r, 2000));
    const late = follow(s.base, runId);

    // The silent ones took a few hundred KB each and nothing since: cut after 3 s stalled, their places free again.
    const t0 = performance.now();
    await until('the stalled followers to be cut', async () => (/^HTTP\/1\.1 200 /.test(await refusal(port, '127.0.0.3', runId)) ? true : undefined), 30_000);
    const freedAfterMs = performance.now() - t0;
    const fdsAfterCut = proc(pid).fds;

    const last = (r: ReturnType<typeof follow>) => Number(/^(\d+) /.exec(r.lines.at(-1)?.line ?? '')?.[1] ?? 0);
    await until('both readers to reach the ticks', async () => (last(slow) > 30_002 && last(late) > 30_002 ? true : undefined), 120_000);
    assert.equal((await fetch(`${s.base}/api/runs/${runId}/cancel`, { method: 'POST' })).status, 202);
    await until('the end events', async () => (slow.end() && late.end() ? true : undefined), 30_000);
    memory.stop();
    const figures = { freedAfterMs: Math.round(freedAfterMs), fdsBefore: before.fds, fdsAfterCut, rssBeforeMB: Math.round(before.rss / MB), peakMB: Math.round(memory.peak() / MB), slowLines: slow.lines.length, lateLines: late.lines.length };
    t.diagnostic(JSON.stringify(figures));
    console.log(`figures: ${JSON.stringify(figures)}`);

    assert.ok(fdsAfterCut < before.fds + 10, `${fdsAfterCut} fds once the stalled were cut (${before.fds} before)`);
    // Serving the pour itself takes ~100 MB here with no follower at all; twenty followers holding the log would add 600 MB.
    assert.ok(memory.peak() < before.rss + 200 * MB, `peak RSS ${Math.round(memory.peak() / MB)} MB (${Math.round(before.rss / MB)} MB before)`);
    for (const [who, r] of [['the slow reader', slow], ['the late one', late]] as const) {
      assert.equal(r.end(), 'canceled');
      const numbers = r.lines.map((l) => Number(/^(\d+) /.exec(l.line)?.[1]));
      const wrong = numbers.findIndex((n, i) => n !== i + 1);
      assert.equal(wrong, -1, `${who}: line ${wrong + 1} is ${numbers[wrong]}`);
      assert.equal(r.lines[0]!.line, `000001 ${'0'.repeat(990)}`);
    }
  } finally {
    memory.stop();
    for (const sock of held) sock.destroy();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out().slice(-4000));
});

test('the caps are settings: a value that is no whole number above 0 is refused at start', async () => {
  const f = await fixture();
  for (const [flag, value, says] of [
    ['--max-log-streams', '0', /--max-log-streams takes a whole number of live logs streamed at once, at least 1, got "0"/],
    ['--max-log-streams-per-client', 'many', /--max-log-streams-per-client takes a whole number/],
    ['--log-stall', '10ms', /--log-stall takes a duration of at least 1s/],
  ] as const) {
    const r = await runCli(['serve', '--pipelines', f.root, '--home', f.home, '--listen', '127.0.0.1:0', flag, value]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, says);
  }
});
