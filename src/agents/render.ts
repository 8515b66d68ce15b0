/**
 * An agent CLI's events as a person reads them: short lines for its
 * messages, each tool call (the command, the file read or written), a
 * one-line summary of each tool result, errors. Each preset says how its
 * CLI's events read (`renderEvent`); these are the shapes they share. Pure:
 * the lines go on to the step's log, masked and made visible like any output.
 */

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
  if (lower === 'bash' || lower === 'shell') return `ran: ${oneLine(i.command)}`;
  if (lower === 'read') return `read ${oneLine(path)}`;
  if (lower === 'write') return `wrote ${oneLine(path)}${typeof i.content === 'string' ? ` (${size(Buffer.byteLength(i.content))})` : ''}`;
  if (lower === 'edit' || lower === 'multiedit' || lower === 'notebookedit') return `edited ${oneLine(path)}`;
  if (lower === 'glob' || lower === 'grep') return `${lower === 'glob' ? 'listed' : 'searched'} ${oneLine(i.pattern)}${path ? ` in ${oneLine(path)}` : ''}`;
  if (lower === 'webfetch' || lower === 'websearch') return `${lower === 'webfetch' ? 'fetched' : 'searched the web for'} ${oneLine(i.url ?? i.query)}`;
  if (lower === 'todowrite') return 'updated its to-do list';
  return `${oneLine(name, 60)} ${oneLine(i, 200)}`.trim();
}

/** A tool result in one line: failed or not, how much it returned. */
export function toolResult(output: unknown, failed: boolean, exitCode?: number | null): string {
  const text = typeof output === 'string' ? output : Array.isArray(output) ? output.map((c) => (typeof c?.text === 'string' ? c.text : '')).join('') : output == null ? '' : JSON.stringify(output);
  const parts = [failed ? 'failed' : 'ok'];
  if (exitCode !== undefined && exitCode !== null) parts.push(`exit ${exitCode}`);
  parts.push(`${text.split('\n').filter(Boolean).length} lines, ${size(Buffer.byteLength(text))}`);
  const first = failed ? oneLine(text.split('\n').find((l) => l.trim()) ?? '', 160) : '';
  return `  → ${parts.join(', ')}${first ? `: ${first}` : ''}`;
}
