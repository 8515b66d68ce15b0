/**
 * Makes the control characters in text a step controls visible, so that what
 * a step printed or named can never drive the terminal it is shown on: no
 * escape sequence (ESC, CSI, OSC: window titles, the clipboard, clearing the
 * screen), no carriage return or backspace that overwrites what the runner
 * printed, no bidirectional override that reorders a line. Pure.
 *
 * C0 controls, DEL and C1 controls become `\xHH` (`\n` and `\r` for newline
 * and carriage return); the Unicode bidirectional controls become `\uHHHH`.
 * A tab stays a tab: it moves the cursor but overwrites nothing.
 */

// C0 but tab, DEL, C1; the bidi marks, embeddings, overrides and isolates.
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// The same, but newlines stay: for text shown as lines (a log, a patch).
const CONTROL_BUT_NEWLINE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

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
