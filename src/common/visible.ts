/**
 * Makes the control characters in text a step controls visible, so that what
 * a step printed or named can never drive the terminal it is shown on: no
 * escape sequence (ESC, CSI, OSC: window titles, the clipboard, clearing the
 * screen), no carriage return or backspace that overwrites what the runner
 * printed, no bidirectional override that reorders a line. Pure.
 *
 * C0 controls, DEL and C1 controls become `\xHH` (`\n` and `\r` for newline
 * and carriage return); the Unicode bidirectional controls, the line and
 * paragraph separators (U+2028, U+2029: a new line to many readers) and a
 * lone surrogate (half of a character, which a client's UTF-8 cannot encode)
 * become `\uHHHH`. A tab stays a tab: it moves the cursor but overwrites nothing.
 */

// C0 but tab, DEL, C1; the bidi marks, embeddings, overrides and isolates; U+2028, U+2029; a lone surrogate.
const SURROGATE = '[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]';
const CONTROL = new RegExp(`[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]|${SURROGATE}`, 'g');
// The same, but newlines stay: for text shown as lines (a log, a patch).
const CONTROL_BUT_NEWLINE = new RegExp(`[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]|${SURROGATE}`, 'g');

const SHOWN = new Map<string, string>();
function show(c: string): string {
  let out = SHOWN.get(c);
  if (out === undefined) {
    const code = c.charCodeAt(0);
    out = c === '\n' ? '\\n' : c === '\r' ? '\\r' : code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
    SHOWN.set(c, out);
  }
  return out;
}

/** One line of text, whatever it holds: newlines become `\n` too. */
export function visible(text: string): string {
  return text.replace(CONTROL, show);
}

/** Text made of lines (a log, a patch): newlines stay, every other control character is made visible. */
export function visibleLines(text: string): string {
  return text.replace(CONTROL_BUT_NEWLINE, show);
}

/**
 * A value about to be serialised (an MCP answer), with every string in it,
 * object keys too, made visible as text of lines (visibleLines): what a client
 * decodes holds no escape sequence, no bidirectional control, no C1
 * character, however the serialiser escapes. Made visible before serialising,
 * not after: `\u001b` in JSON text decodes back to ESC, and a C1 character
 * shown as `\x9b` after it is not JSON at all. Pure.
 */
export function visibleDeep(value: unknown): unknown {
  if (typeof value === 'string') return visibleLines(value);
  if (Array.isArray(value)) return value.map(visibleDeep);
  if (value && typeof value === 'object') {
    if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return visibleDeep((value as { toJSON: () => unknown }).toJSON());
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [visibleLines(k), visibleDeep(v)]));
  }
  return value;
}

/**
 * A message that may span lines (git's words on a failed push), as lines a
 * terminal shows: the first after `prefix`, each other after it indented, so
 * no line of the message can pose as a line of its own; every line made
 * visible; at most `max` lines, the rest counted. Pure.
 */
export function visibleMessage(text: string, prefix: string, max = 20): string {
  const lines = text.replace(/\r\n/g, '\n').replace(/\n+$/, '').split('\n');
  const shown = lines.slice(0, max).map((l, i) => `${i === 0 ? prefix : `${prefix}  `}${visible(l)}`);
  if (lines.length > max) shown.push(`${prefix}  … ${lines.length - max} more lines`);
  return shown.join('\n');
}

/**
 * A name as bytes (a path a step made need not be UTF-8), as one visible
 * line: what is valid UTF-8 is shown as text (its control characters made
 * visible), every byte that is not is shown as `\xHH`, so two different
 * names never look the same for want of a byte.
 */
export function visibleBytes(name: Buffer): string {
  let out = '';
  let from = 0;
  let i = 0;
  while (i < name.length) {
    const n = utf8Length(name, i);
    if (n > 0) {
      i += n;
      continue;
    }
    out += visible(name.subarray(from, i).toString('utf8')) + `\\x${name[i]!.toString(16).padStart(2, '0')}`;
    from = ++i;
  }
  return out + visible(name.subarray(from).toString('utf8'));
}

/** The length of the valid UTF-8 sequence at `at`, or 0 when the byte there starts none. */
function utf8Length(b: Buffer, at: number): number {
  const c = b[at]!;
  if (c < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf) => at + k < b.length && b[at + k]! >= lo && b[at + k]! <= hi;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    // no overlong forms (E0 80..9F), no surrogates (ED A0..BF)
    const ok = cont(1, c === 0xe0 ? 0xa0 : 0x80, c === 0xed ? 0x9f : 0xbf) && cont(2);
    return ok ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const ok = cont(1, c === 0xf0 ? 0x90 : 0x80, c === 0xf4 ? 0x8f : 0xbf) && cont(2) && cont(3);
    return ok ? 4 : 0;
  }
  return 0;
}
