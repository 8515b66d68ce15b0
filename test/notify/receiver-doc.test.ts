/** docs/notify.md's receiver, run as written: it takes a signed notification and refuses a changed body and a replay. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { signedHeaders } from '../../src/notify/sign.js';
import { send, type Attempt } from '../../src/notify/send.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const SECRET = 'doc-secret-91c0';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

test("the documented receiver verifies the runner's signature and refuses a changed body and a replay older than 5 minutes", async () => {
  const doc = await readFile(path.join(ROOT, 'docs/notify.md'), 'utf8');
  const code = /^```js receiver\.mjs\n([\s\S]*?)^```$/m.exec(doc)?.[1];
  assert.ok(code, 'docs/notify.md has a ```js receiver.mjs block');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'receiver-'));
  after(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'receiver.mjs'), code);
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(dir, 'receiver.mjs')], { env: { PATH: process.env.PATH ?? '', WEBHOOK_SECRET: SECRET, PORT: String(port) }, stdio: ['ignore', 'pipe', 'inherit'] });
  after(() => child.kill());
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const url = `http://127.0.0.1:${port}/`;
  // the runner's own send, once the receiver listens
  const body = JSON.stringify({ runId: 'r1', pipeline: 'nightly', status: 'failed', link: '/runs/r1' });
  const attempts: Attempt[] = [];
  for (let i = 0; i < 50 && !attempts.at(-1)?.ok; i++) {
    attempts.length = 0;
    await send({ url, body, secret: SECRET, now: () => new Date() }, (a) => attempts.push(a), { attempts: 1, firstPauseMs: 0, attemptMs: 2000, deadlineMs: 2000 });
    if (!attempts.at(-1)?.ok) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(attempts.at(-1)?.httpStatus, 204, JSON.stringify(attempts));
  for (let i = 0; i < 50 && !out.includes('\n'); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(out, 'nightly: run r1 failed (/runs/r1)\n');

  const post = async (headers: Record<string, string>, b: string) => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: b });
    return `${res.status} ${await res.text()}`.trim();
  };
  const now = signedHeaders(SECRET, body, new Date());
  assert.equal(await post(now, body.replace('failed', 'succeeded')), '401 bad signature');
  assert.equal(await post({}, body), '401 bad signature');
  assert.equal(await post(signedHeaders('another', body, new Date()), body), '401 bad signature');
  // a request recorded 6 minutes ago and sent again: its signature is right, its time is not
  assert.equal(await post(signedHeaders(SECRET, body, new Date(Date.now() - 6 * 60_000)), body), '401 too old: a replay?');
  // and its timestamp cannot be brought forward without breaking the signature
  const old = signedHeaders(SECRET, body, new Date(Date.now() - 6 * 60_000));
  assert.equal(await post({ ...old, 'x-runner-timestamp': String(Math.floor(Date.now() / 1000)) }, body), '401 bad signature');
  assert.equal(await post(now, body), '204');
});
