/**
 * What a running step is doing, for the run page's timeline: when it started,
 * how much it printed and when it last did, its last line; for an agent step,
 * from its transcript, how many tool calls and messages it made so far and its
 * last event. Only the steps running now, read each time the page asks (every
 * two seconds): a log's size and last line are a stat and a read of its tail;
 * a transcript is read on from where the last look stopped (one reader per
 * file, kept while its step runs), so a long agent step is never read twice.
 */
import { open } from 'node:fs/promises';
import path from 'node:path';
import { EventReader, type AgentEvent } from '../agents/events.js';
import { PRESETS } from '../agents/presets.js';
import { renderAgentEvent } from '../agents/render.js';
import { presetOfLine } from '../agents/transcript.js';
import { visible } from '../common/visible.js';
import type { RunRecord } from '../run/record.js';

export interface StepActivity {
  startedAt: string;
  /** what it printed: bytes in its log, when it last wrote, its last line (cut) */
  output: { bytes: number; lastAt: string | null; last: string | null };
  /** an agent step (it has a transcript): its tool calls and messages so far, its last event as the log renders it, and when */
  agent?: { toolCalls: number; messages: number; failedTools: number; last: string | null; lastAt: string | null };
}

/** The tail read for a log's last line. */
const TAIL_BYTES = 4096;
/** A transcript is read on by at most this much per look: a step pouring events is caught up with over a few looks. */
const READ_PER_LOOK = 4 * 1024 * 1024;
/** A line of a transcript longer than this is no event (agent-follow.ts keeps it, unrendered): dropped here. */
const MAX_EVENT_LINE = 1024 * 1024;
const LAST_CHARS = 200;
/** Transcripts followed at once, in all runs (a run page not looked at again keeps its reader until its run is asked for again, or this bound). */
const TALLIES_KEPT = 200;

interface Tally {
  offset: number;
  rest: string;
  reader: EventReader | undefined;
  toolCalls: number;
  messages: number;
  failedTools: number;
  last: string | null;
  lastAt: string | null;
}

/** What the running steps of a run are doing; one per server, its transcript readers kept while their steps run. */
export class StepActivities {
  private readonly tallies = new Map<string, Tally>();

  /** The activity of each step `rec` says is running, by its name ({} for a run that is not running). */
  async of(runDir: string, rec: Pick<RunRecord, 'status' | 'current'> & Partial<Pick<RunRecord, 'running'>>): Promise<Record<string, StepActivity>> {
    if (rec.status !== 'running') {
      this.forget(runDir, new Set());
      return {};
    }
    const now: Array<{ name: string; startedAt: string }> = Array.isArray(rec.running) ? rec.running.map((x) => ({ name: x.name ?? x.id, startedAt: x.startedAt })) : rec.current ? [{ name: rec.current.id, startedAt: rec.current.startedAt }] : [];
    const out: Record<string, StepActivity> = {};
    for (const s of now) {
      const steps = path.join(runDir, 'steps');
      const a: StepActivity = { startedAt: s.startedAt, output: await logTail(path.join(steps, `${s.name}.log`)) };
      const agent = await this.agent(path.join(steps, `${s.name}.transcript.jsonl`));
      if (agent) a.agent = agent;
      out[s.name] = a;
    }
    this.forget(runDir, new Set(now.map((s) => path.join(runDir, 'steps', `${s.name}.transcript.jsonl`))));
    return out;
  }

  /** A transcript whose step no longer runs is read no more; past TALLIES_KEPT, the oldest followed is dropped (read again from its start if asked). */
  private forget(runDir: string, live: Set<string>): void {
    for (const file of this.tallies.keys()) if (file.startsWith(`${runDir}${path.sep}`) && !live.has(file)) this.tallies.delete(file);
    while (this.tallies.size > TALLIES_KEPT) this.tallies.delete(this.tallies.keys().next().value!);
  }

  /** How many transcripts are followed now. */
  size(): number {
    return this.tallies.size;
  }

  private async agent(file: string): Promise<StepActivity['agent'] | undefined> {
    let fh;
    try {
      fh = await open(file, 'r');
    } catch {
      this.tallies.delete(file);
      return undefined; // not an agent step, or its CLI has not written yet
    }
    try {
      const st = await fh.stat();
      let t = this.tallies.get(file);
      if (!t || st.size < t.offset) t = { offset: 0, rest: '', reader: undefined, toolCalls: 0, messages: 0, failedTools: 0, last: null, lastAt: null };
      this.tallies.set(file, t);
      const want = Math.min(st.size - t.offset, READ_PER_LOOK);
      if (want > 0) {
        const buf = Buffer.alloc(want);
        const { bytesRead } = await fh.read(buf, 0, want, t.offset);
        t.offset += bytesRead;
        const lines = (t.rest + buf.subarray(0, bytesRead).toString('utf8')).split('\n');
        t.rest = lines.pop() ?? '';
        if (t.rest.length > MAX_EVENT_LINE) t.rest = '';
        for (const line of lines) for (const e of this.events(t, line)) count(t, e, st.mtime.toISOString());
      }
      return { toolCalls: t.toolCalls, messages: t.messages, failedTools: t.failedTools, last: t.last, lastAt: t.lastAt };
    } finally {
      await fh.close();
    }
  }

  /** A transcript line's events; its CLI is known by the first line only one of them writes (transcript.ts). */
  private events(t: Tally, line: string): AgentEvent[] {
    if (!line.trim() || line.length > MAX_EVENT_LINE) return [];
    if (!t.reader) {
      let v: unknown;
      try {
        v = JSON.parse(line);
      } catch {
        return [];
      }
      const name = v !== null && typeof v === 'object' && !Array.isArray(v) ? presetOfLine(v as Record<string, unknown>) : undefined;
      const preset = name ? PRESETS[name] : undefined;
      if (!preset) return [];
      t.reader = new EventReader(preset.name, (l) => preset.events(l));
    }
    return t.reader.line(line);
  }
}

/** An event counted, and kept as the last when the log shows it. */
function count(t: Tally, e: AgentEvent, at: string): void {
  if (e.kind === 'tool_call') t.toolCalls++;
  if (e.kind === 'message') t.messages++;
  if (e.kind === 'tool_result' && !e.ok) t.failedTools++;
  if (e.kind === 'usage' || e.kind === 'tool_result') return; // a result is its call's: the call says what the agent is doing
  const line = renderAgentEvent(e)[0];
  if (!line) return;
  t.last = cut(line);
  t.lastAt = at;
}

/** A log's size, when it was last written, and its last line that is not blank. */
async function logTail(file: string): Promise<StepActivity['output']> {
  let fh;
  try {
    fh = await open(file, 'r');
  } catch {
    return { bytes: 0, lastAt: null, last: null };
  }
  try {
    const st = await fh.stat();
    const want = Math.min(st.size, TAIL_BYTES);
    const buf = Buffer.alloc(want);
    const { bytesRead } = await fh.read(buf, 0, want, st.size - want);
    const lines = buf.subarray(0, bytesRead).toString('utf8').split('\n');
    // a tail cut mid-line has a first line that is not whole: take it only when it is all there is
    const whole = want < st.size ? lines.slice(1) : lines;
    const last = [...whole].reverse().find((l) => l.trim()) ?? null;
    return { bytes: st.size, lastAt: st.size ? st.mtime.toISOString() : null, last: last === null ? null : cut(last) };
  } finally {
    await fh.close();
  }
}

function cut(line: string): string {
  const v = visible(line.trimEnd());
  return v.length > LAST_CHARS ? `${v.slice(0, LAST_CHARS - 1)}…` : v;
}
