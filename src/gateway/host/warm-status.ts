/**
 * How many step gateways each runner of a home keeps warm, for the commands
 * that do not hold the pool (`runner runs`, another `runner serve`'s
 * dashboard): every pool writes `<home>/warm/<host>-<pid>.json` when its count
 * changes and removes it at its close. A file whose runner died (this host, a
 * pid not alive, or alive but another process's: one that started at another
 * time than the writer) is not counted, and is removed by the next pool.
 */
import os from 'node:os';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { writeFileAtomic } from '../../common/atomic-write.js';
import { pidAlive } from '../../common/pid-alive.js';

export interface WarmStatus {
  host: string;
  pid: number;
  /** the command that keeps them: `serve` or `exec` */
  command: string;
  /** made and waiting for a step now */
  warm: number;
  /** of those, how many have the step's container made beside them (a pool that keeps them: the local engine) */
  containers?: number;
  /** how many it keeps (--warm N) */
  size: number;
  /** set when the pool gave its gateways back for want of steps (made again at the next step) */
  idle: boolean;
  /** when the writer's process started (processStart): a pid another process has since is told apart */
  started?: string;
}

/** When a process of this machine started (clock ticks after boot: /proc/<pid>/stat, field 22), or undefined without /proc. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // after the command's name in parentheses (which may hold spaces and parentheses): state is field 3, start time 22
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return start && /^\d+$/.test(start) ? start : undefined;
  } catch {
    return undefined;
  }
}

export function warmDir(home: string): string {
  return path.join(home, 'warm');
}

function fileOf(dir: string, host: string, pid: number): string {
  return path.join(dir, `${host.replace(/[^A-Za-z0-9_.-]/g, '_')}-${pid}.json`);
}

export async function writeWarmStatus(dir: string, s: WarmStatus): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const started = s.started ?? (s.pid === process.pid ? processStart(s.pid) : undefined);
  await writeFileAtomic(fileOf(dir, s.host, s.pid), `${JSON.stringify({ ...s, ...(started ? { started } : {}) })}\n`);
}

export async function removeWarmStatus(dir: string, host: string, pid: number): Promise<void> {
  await rm(fileOf(dir, host, pid), { force: true });
}

/** Whether a status file's runner is gone: on this host, its pid is not alive, or is another process's now. Pure but for the pid's checks. */
export function statusDead(s: WarmStatus, host = os.hostname()): boolean {
  if (s.host !== host) return false;
  if (!pidAlive(s.pid)) return true;
  const now = s.started !== undefined ? processStart(s.pid) : undefined;
  return now !== undefined && now !== s.started;
}

/** The status of every live pool of the home; those of dead runners are removed when `prune`. */
export async function readWarmStatuses(dir: string, prune = false): Promise<WarmStatus[]> {
  const out: WarmStatus[] = [];
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.endsWith('.json')) continue;
    const s = parseStatus(await readFile(path.join(dir, name), 'utf8').catch(() => ''));
    if (!s) continue;
    if (statusDead(s)) {
      if (prune) await rm(path.join(dir, name), { force: true });
      continue;
    }
    out.push(s);
  }
  return out.sort((a, b) => a.host.localeCompare(b.host) || a.pid - b.pid);
}

function parseStatus(text: string): WarmStatus | undefined {
  try {
    const v = JSON.parse(text) as Partial<WarmStatus>;
    const whole = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 0;
    if (typeof v.host !== 'string' || !whole(v.pid) || typeof v.command !== 'string' || !whole(v.warm) || !whole(v.size)) return undefined;
    const started = typeof v.started === 'string' && /^\d{1,20}$/.test(v.started) ? { started: v.started } : {};
    return { host: v.host, pid: v.pid, command: v.command, warm: v.warm, ...(whole(v.containers) ? { containers: v.containers } : {}), size: v.size, idle: v.idle === true, ...started };
  } catch {
    return undefined;
  }
}

/** One line for a person: how many are warm and who keeps them; undefined when no runner keeps any. Pure. */
export function describeWarm(statuses: readonly WarmStatus[], host = os.hostname()): string | undefined {
  if (!statuses.length) return undefined;
  const warm = statuses.reduce((n, s) => n + s.warm, 0);
  const size = statuses.reduce((n, s) => n + s.size, 0);
  const who = statuses
    .map((s) => `runner ${s.command} --warm ${s.size}, pid ${s.pid}${s.host === host ? '' : ` on ${s.host}`}: ${s.idle ? 'given back while idle, made again at the next step' : `${s.warm} ready${s.containers !== undefined ? `, ${s.containers} with the step's container made too` : ''}`}`)
    .join('; ');
  return `${warm} of ${size} step gateway${size === 1 ? '' : 's'} warm, each made ahead for one step alone (${who})`;
}
