/**
 * One notification's delivery: a POST from the runner process itself (never
 * through a step's gateway), signed afresh at each attempt, tried again on a
 * network error, a timeout or an answer other than 2xx, with a doubling pause,
 * within a number of attempts and a total deadline. Never throws: it says how
 * each attempt went.
 */
import http from 'node:http';
import https from 'node:https';
import { signedHeaders } from './sign.js';

export interface SendLimits {
  /** attempts in all (4) */
  attempts: number;
  /** the first pause between attempts, doubled after each (1 s) */
  firstPauseMs: number;
  /** one attempt's bound (10 s) */
  attemptMs: number;
  /** all attempts and pauses together (30 s) */
  deadlineMs: number;
}

export const DEFAULT_LIMITS: SendLimits = { attempts: 4, firstPauseMs: 1000, attemptMs: 10_000, deadlineMs: 30_000 };

export interface Attempt {
  attempt: number;
  ok: boolean;
  /** the HTTP status, when an answer came */
  httpStatus?: number;
  /** what went wrong without an answer: timeout, ECONNREFUSED… */
  error?: string;
}

export interface SendRequest {
  url: string;
  body: string;
  /** the secret's value, when the entry signs */
  secret?: string;
  now: () => Date;
}

/** Tries until an attempt answers 2xx, attempts run out or the deadline passes; `onAttempt` hears each attempt. True when delivered. */
export async function send(req: SendRequest, onAttempt: (a: Attempt) => void, limits: SendLimits = DEFAULT_LIMITS): Promise<boolean> {
  const deadline = Date.now() + limits.deadlineMs;
  let pause = limits.firstPauseMs;
  for (let attempt = 1; attempt <= limits.attempts; attempt++) {
    const left = deadline - Date.now();
    if (left <= 0) break;
    const result = await post(req, Math.min(limits.attemptMs, left));
    onAttempt({ attempt, ...result });
    if (result.ok) return true;
    if (attempt === limits.attempts || deadline - Date.now() <= pause) break;
    await new Promise((r) => setTimeout(r, pause));
    pause *= 2;
  }
  return false;
}

async function post(req: SendRequest, timeoutMs: number): Promise<Omit<Attempt, 'attempt'>> {
  const u = new URL(req.url);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(req.body)),
    'user-agent': 'runner-notify',
    connection: 'close',
    ...(req.secret !== undefined ? signedHeaders(req.secret, req.body, req.now()) : {}),
  };
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: Omit<Attempt, 'attempt'>) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const request = (u.protocol === 'https:' ? https : http).request(u, { method: 'POST', headers, agent: false }, (res) => {
      // the answer's body is not read beyond what it takes to end the exchange
      res.resume();
      res.on('end', () => finish(ok(res.statusCode)));
      res.on('error', () => finish(ok(res.statusCode)));
    });
    const timer = setTimeout(() => {
      finish({ ok: false, error: `no answer within ${Math.round(timeoutMs / 100) / 10} s` });
      request.destroy();
    }, timeoutMs);
    request.on('error', (err: NodeJS.ErrnoException) => finish({ ok: false, error: err.code ?? err.message }));
    request.end(req.body);
  });
}

function ok(status: number | undefined): Omit<Attempt, 'attempt'> {
  return { ok: status !== undefined && status >= 200 && status < 300, ...(status !== undefined ? { httpStatus: status } : {}) };
}
