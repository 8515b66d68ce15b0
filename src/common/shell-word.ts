/** Words for /bin/sh: in scripts the runner writes and in commands a person pastes. Pure. */

/** Single-quoted: nothing in it is expanded. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** One word, quoted only when it must be (a path in a hint reads as typed). */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(s) ? s : shellQuote(s);
}
