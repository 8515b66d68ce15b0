/**
 * The one renderer: an agent's events (events.ts, the same shape whichever
 * CLI ran) as lines a person reads: short lines for its messages, each tool
 * call (the command, the file read or written), each tool result in a line
 * (ok or failed, its exit code, timed out or moved to the background) with a
 * command's last lines under it, a background command's end, errors. Pure:
 * the lines go on to the step's log (and so the console and the dashboard),
 * masked there; their control characters are made visible here already.
 */
import { visible } from '../common/visible.js';
import type { AgentEvent } from './events.js';

/** The longest a rendered line gets (a message's first lines, a command). */
export const MAX_RENDERED = 300;

/** `text` on one line, cut to `max` with an ellipsis. */
export function oneLine(text: unknown, max = MAX_RENDERED): string {
  const s = typeof text === 'string' ? text : text === undefined || text === null ? '' : JSON.stringify(text);
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A message of the agent's: its first lines, each prefixed, the rest counted. */
export function messageLines(prefix: string, text: unknown, maxLines = 6): string[] {
  if (typeof text !== 'string' || !text.trim()) return [];
  const lines = text.trim().split('\n').filter((l) => l.trim());
  const shown = lines.slice(0, maxLines).map((l) => `${prefix}${oneLine(l)}`);
  if (lines.length > maxLines) shown.push(`${prefix}… (${lines.length - maxLines} more lines)`);
  return shown;
}

/** A size as people write it: 512 B, 3.4 KB, 1.2 MB. */
export function size(n: number): string {
  return n < 1000 ? `${n} B` : n < 1e6 ? `${(n / 1e3).toFixed(1)} KB` : `${(n / 1e6).toFixed(1)} MB`;
}

/** What a tool call does, in a few words, from its name and input (the shapes Claude Code and opencode share). */
export function toolCall(name: string, input: Record<string, unknown> | undefined): string {
  const i = input ?? {};
  const path = i.file_path ?? i.filePath ?? i.path ?? i.notebook_path;
  const lower = name.toLowerCase();
  if (lower === 'bash' || lower === 'shell') return `ran: ${oneLine(i.command)}${i.run_in_background === true ? ' (in the background)' : ''}`;
  if (lower === 'read') return `read ${oneLine(path)}`;
  if (lower === 'write') return `wrote ${oneLine(path)}${typeof i.content === 'string' ? ` (${size(Buffer.byteLength(i.content))})` : ''}`;
  if (lower === 'edit' || lower === 'multiedit' || lower === 'notebookedit') return `edited ${oneLine(path)}`;
  if (lower === 'glob' || lower === 'grep') return `${lower === 'glob' ? 'listed' : 'searched'} ${oneLine(i.pattern)}${path ? ` in ${oneLine(path)}` : ''}`;
  if (lower === 'webfetch' || lower === 'websearch') return `${lower === 'webfetch' ? 'fetched' : 'searched the web for'} ${oneLine(i.url ?? i.query)}`;
  if (lower === 'todowrite') return 'updated its to-do list';
  return `${oneLine(name, 60)} ${oneLine(i, 200)}`.trim();
}

/** How many of a command's last lines the log shows under its result. */
export const LOG_TAIL = 5;

const seconds = (ms: number) => (ms % 1000 === 0 || ms >= 10_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`);

/** One event as the lines of a step's log. */
export function renderAgentEvent(e: AgentEvent): string[] {
  return renderRaw(e).map(visible);
}

function renderRaw(e: AgentEvent): string[] {
  const who = `${e.agent}: `;
  switch (e.kind) {
    case 'start':
      if (e.wrapUp) return [`${who}wrap-up: a conversation it started itself after its work (a background command ended); not the step's summary`];
      return [`${who}started${e.model ? ` (${oneLine(e.model, 80)})` : ''}`];
    case 'message':
      return messageLines(`${who}${e.wrapUp ? '(wrap-up) ' : ''}`, e.text);
    case 'tool_call':
      return [`${who}${toolCall(e.tool, e.input)}`];
    case 'tool_result': {
      const parts: string[] = [];
      if (e.outcome === 'backgrounded') {
        parts.push(e.timeoutMs !== undefined ? `not done after its ${seconds(e.timeoutMs)} limit: moved to the background` : 'running in the background');
        if (e.task) parts.push(`task ${oneLine(e.task, 60)}`);
        parts.push('its end comes later');
      } else {
        parts.push(e.outcome === 'timed_out' ? `timed out${e.timeoutMs !== undefined ? ` after ${seconds(e.timeoutMs)}` : ''}: stopped` : e.ok ? 'ok' : 'failed');
        if (e.exitCode !== undefined && (e.exitCode !== 0 || !e.ok)) parts.push(`exit ${e.exitCode}`);
      }
      parts.push(`${e.lines} line${e.lines === 1 ? '' : 's'}, ${size(e.bytes)}`);
      const command = e.tool === 'shell' || e.exitCode !== undefined;
      // a command's last lines (what the agent saw of its tests); of another tool, a failure's first line
      const first = !command && !e.ok ? oneLine(e.tail.find((l) => l.trim()) ?? '', 160) : '';
      const head = `  → ${parts.join(', ')}${first ? `: ${first}` : ''}`;
      const tail = command && e.outcome !== 'backgrounded' ? e.tail.filter((l) => l.trim()).slice(-LOG_TAIL).map((l) => `    │ ${oneLine(l, 200)}`) : [];
      return [head, ...tail];
    }
    case 'task_end':
      return [`${who}background task ${oneLine(e.task, 60)} ${e.ok ? 'ended' : 'failed'}${e.exitCode !== undefined ? `, exit ${e.exitCode}` : ''}${e.text ? `: ${oneLine(e.text, 200)}` : ''}`];
    case 'files':
      return e.changes.length ? [`${who}${e.changes.map((c) => `${c.change === 'added' ? 'wrote' : c.change} ${oneLine(c.path, 200)}`).join(', ')}`] : [];
    case 'usage':
      return [];
    case 'final': {
      const details = [
        ...(e.reason ? [oneLine(e.reason, 60)] : []),
        ...(e.turns !== undefined ? [`${e.turns} turn${e.turns === 1 ? '' : 's'}`] : []),
        ...(e.reason === undefined && e.inputTokens !== undefined ? [`${e.inputTokens} tokens in, ${e.outputTokens ?? 0} out`] : []),
      ];
      return [`${who}${e.wrapUp ? 'wrap-up ' : ''}finished${e.ok ? '' : ' with an error'}${details.length ? `: ${details.join(', ')}` : ''}`];
    }
    case 'retry':
      return [`${who}the model API failed, retrying (${oneLine(e.text, 120)})`];
    case 'notice':
      return [`${who}warning: ${oneLine(e.text)}`];
    case 'error':
      return [`${who}error: ${oneLine(e.text)}`];
  }
}
