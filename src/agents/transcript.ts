/**
 * An agent step's transcript (steps/<step>.transcript.jsonl: its CLI's stream,
 * kept as the CLI wrote it) read as events of the one shape (events.ts),
 * whichever CLI wrote it: what `runner logs --transcript --json` prints and
 * MCP's `step_transcript` answers. The CLI is known by its first line that
 * only one of them writes.
 */
import type { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import { visibleLines } from '../common/visible.js';
import { EventReader, type AgentEvent } from './events.js';
import { PRESETS } from './presets.js';

/** The longest string an event shows (a file the agent wrote, a long message): the rest is counted. */
export const MAX_SHOWN = 4000;

/** Which preset's CLI wrote this line of a stream, if only one of them writes lines like it. */
export function presetOfLine(e: Record<string, any>): string | undefined {
  if (typeof e.type !== 'string') return undefined;
  if (/^(thread|turn|item)\./.test(e.type)) return 'codex';
  if (typeof e.sessionID === 'string' && e.part && typeof e.part === 'object') return 'opencode';
  if (['system', 'assistant', 'user', 'result'].includes(e.type) && typeof e.session_id === 'string') return 'claude-code';
  return undefined;
}

/** The events of a transcript, in order, as its lines are read. */
export async function* transcriptEvents(input: Readable): AsyncGenerator<AgentEvent> {
  let reader: EventReader | undefined;
  const lines = createInterface({ input, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      if (!reader) {
        let v: unknown;
        try {
          v = JSON.parse(line);
        } catch {
          continue;
        }
        const name = v !== null && typeof v === 'object' && !Array.isArray(v) ? presetOfLine(v as Record<string, any>) : undefined;
        const preset = name ? PRESETS[name] : undefined;
        if (!preset) continue;
        reader = new EventReader(preset.name, (l) => preset.events(l));
      }
      yield* reader.line(line);
    }
  } finally {
    lines.close();
  }
}

/** An event as a door gives it: each string's control characters made visible (newlines stay), each cut at MAX_SHOWN. */
export function shownEvent(e: AgentEvent): AgentEvent {
  return shown(e) as AgentEvent;
}

function shown(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return visibleLines(v.length > MAX_SHOWN ? `${v.slice(0, MAX_SHOWN)}… (${v.length - MAX_SHOWN} more characters)` : v);
  if (depth > 20 || v === null || typeof v !== 'object') return depth > 20 ? '…' : v;
  if (Array.isArray(v)) return v.slice(0, 1000).map((x) => shown(x, depth + 1));
  return Object.fromEntries(Object.entries(v).slice(0, 1000).map(([k, x]) => [visibleLines(k.slice(0, 200)), shown(x, depth + 1)]));
}
