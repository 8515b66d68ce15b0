/**
 * Finds a secret's value in what a step sends through its gateway (a URL, a
 * header, a body), in the forms a program would send it in, and bounds the
 * bytes of request bodies the gateway holds at once. Pure (no I/O): the
 * gateway's TLS-terminating proxy feeds it.
 *
 * Each checked secret becomes a handful of byte patterns:
 * - plain (its UTF-8 bytes) and JSON-escaped (when that differs);
 * - URL-encoded: as encodeURIComponent, encodeURI and a form
 *   (application/x-www-form-urlencoded, a space as "+") write it, and with
 *   every byte percent-encoded; the hex digits of a percent-encoding match in
 *   either case;
 * - base64 and base64url, found inside a longer base64 text too: for each of
 *   the 3 byte alignments the value may start at, the characters that depend
 *   on its bytes alone (no padding, none of the neighbours' bits);
 * - hex, in either case.
 * All patterns of all secrets are one Aho-Corasick automaton over bytes with
 * ASCII letters folded, compiled to a table (one lookup per byte: linear in
 * the data, whatever the number of secrets); a match of a pattern that is
 * case-sensitive (plain, base64) is then checked byte for byte.
 */

export interface SecretHit {
  secret: string;
  /** how it was written, never the value: plain, json-escaped, url-encoded, form-encoded, percent-encoded, base64, base64url, hex, or url-encoded <form> when found once the URL was decoded */
  form: string;
}

/** Values shorter than this (in UTF-8 bytes) are not checked: they would be found in ordinary traffic. */
export const MIN_SECRET_BYTES = 8;

interface Pattern {
  secret: string;
  form: string;
  bytes: Uint8Array;
  /** positions that match in either case (hex digits); undefined: none */
  anyCase?: Uint8Array;
}

const fold = (b: number): number => (b >= 0x41 && b <= 0x5a ? b + 32 : b);

/** The patterns of one value, each once. */
export function patternsOf(secret: string, value: string): Pattern[] {
  const out: Pattern[] = [];
  const seen = new Set<string>();
  const add = (form: string, bytes: Uint8Array, anyCase?: Uint8Array): void => {
    if (bytes.length === 0) return;
    const loose = anyCase?.includes(1) ? anyCase : undefined;
    const key = patternKey(bytes, loose);
    if (seen.has(key)) return;
    seen.add(key);
    out.push(loose ? { secret, form, bytes, anyCase: loose } : { secret, form, bytes });
  };
  const bytes = Buffer.from(value, 'utf8');
  add('plain', bytes);
  const json = JSON.stringify(value).slice(1, -1);
  add('json-escaped', Buffer.from(json, 'utf8'));
  add('json-escaped', Buffer.from(json.replace(/\//g, '\\/'), 'utf8'));
  for (const [form, encode] of [
    ['url-encoded', encodeURIComponent],
    ['url-encoded', encodeURI],
    ['form-encoded', (v: string) => new URLSearchParams({ v }).toString().slice(2)],
  ] as const) {
    let text: string;
    try {
      text = encode(value);
    } catch {
      continue; // a lone surrogate: no program sends it this way
    }
    add(form, ...percentPattern(text));
  }
  add('percent-encoded', ...percentPattern([...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')));
  for (const [form, url] of [['base64', false], ['base64url', true]] as const) {
    for (const inner of base64Inner(bytes)) add(form, Buffer.from(url ? inner.replace(/\+/g, '-').replace(/\//g, '_') : inner, 'latin1'));
  }
  const hex = Buffer.from(bytes.toString('hex'), 'latin1');
  add('hex', hex, new Uint8Array(hex.length).fill(1));
  return out;
}

function patternKey(bytes: Uint8Array, anyCase: Uint8Array | undefined): string {
  return `${Buffer.from(bytes).toString('hex')}/${anyCase ? Buffer.from(anyCase).toString('hex') : ''}`;
}

/** A percent-encoded text and the positions of its hex digits (either case matches). */
function percentPattern(text: string): [Uint8Array, Uint8Array] {
  const bytes = Buffer.from(text, 'latin1');
  const anyCase = new Uint8Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0x25) anyCase[i + 1] = anyCase[i + 2] = 1;
  return [bytes, anyCase];
}

/**
 * The base64 characters that depend on the value's bytes alone, for each alignment (0, 1 or 2 bytes before it in
 * its group of 3): a character covers 6 bits, and is kept when all 6 are the value's.
 */
export function base64Inner(bytes: Uint8Array): string[] {
  const out: string[] = [];
  for (let a = 0; a < 3; a++) {
    const encoded = Buffer.concat([Buffer.alloc(a), bytes, Buffer.alloc(2)]).toString('base64');
    const from = Math.ceil((8 * a) / 6);
    const to = Math.floor((8 * (a + bytes.length)) / 6); // exclusive
    if (to > from) out.push(encoded.slice(from, to));
  }
  return out;
}

interface Automaton {
  /** byte -> class (letters folded; a byte in no pattern is class 0) */
  cls: Uint8Array;
  classes: number;
  /** state * classes + class -> next state * classes */
  delta: Int32Array;
  /** states from here on (premultiplied) end a pattern */
  terminalFrom: number;
  /** the patterns ending at terminal state s (index (s - terminalFrom) / classes) */
  ends: number[][];
}

function build(patterns: Pattern[]): Automaton {
  const cls = new Uint8Array(256);
  let classes = 1;
  for (const p of patterns) {
    for (const b of p.bytes) {
      const f = fold(b);
      if (cls[f] === 0) cls[f] = classes++;
    }
  }
  for (let b = 0x41; b <= 0x5a; b++) cls[b] = cls[b + 32]!;
  const total = patterns.reduce((n, p) => n + p.bytes.length, 1);
  const next = new Int32Array(total * classes).fill(-1);
  const endsAt: number[][] = [[]];
  let states = 1;
  patterns.forEach((p, index) => {
    let s = 0;
    for (const b of p.bytes) {
      const at = s * classes + cls[b]!;
      if (next[at]! < 0) {
        next[at] = states++;
        endsAt.push([]);
      }
      s = next[at]!;
    }
    endsAt[s]!.push(index);
  });
  // breadth first: each state's failure, its missing transitions taken from it, its outputs joined with it
  const fail = new Int32Array(states);
  const queue: number[] = [0];
  for (let q = 0; q < queue.length; q++) {
    const s = queue[q]!;
    for (let c = 0; c < classes; c++) {
      const t = next[s * classes + c]!;
      const viaFail = s === 0 ? 0 : next[fail[s]! * classes + c]!;
      if (t < 0) {
        next[s * classes + c] = viaFail;
        continue;
      }
      fail[t] = viaFail;
      if (endsAt[viaFail]!.length > 0) endsAt[t] = endsAt[t]!.concat(endsAt[viaFail]!);
      queue.push(t);
    }
  }
  // renumbered: the states that end a pattern last, so the scan tests one number; premultiplied by classes
  const order = [...Array(states).keys()].sort((x, y) => Number(endsAt[x]!.length > 0) - Number(endsAt[y]!.length > 0) || x - y);
  const renamed = new Int32Array(states);
  order.forEach((s, i) => (renamed[s] = i));
  const delta = new Int32Array(states * classes);
  for (let s = 0; s < states; s++) {
    for (let c = 0; c < classes; c++) delta[renamed[s]! * classes + c] = renamed[next[s * classes + c]!]! * classes;
  }
  const firstTerminal = order.findIndex((s) => endsAt[s]!.length > 0);
  const terminalFrom = (firstTerminal < 0 ? states : firstTerminal) * classes;
  const ends = firstTerminal < 0 ? [] : order.slice(firstTerminal).map((s) => endsAt[s]!);
  return { cls, classes, delta, terminalFrom, ends };
}

const EMPTY = new Uint8Array(0);
const decodedForm = (hit: SecretHit): SecretHit => ({ secret: hit.secret, form: hit.form === 'plain' ? 'url-encoded' : `url-encoded ${hit.form}` });

export class SecretScanner {
  /** the secrets not checked (values shorter than MIN_SECRET_BYTES), by name */
  readonly unchecked: string[] = [];
  /** the longest pattern, in bytes: a stream keeps this less one of what it read */
  readonly longest: number;
  private readonly patterns: Pattern[] = [];
  private readonly automaton: Automaton;
  /** some checked value has a space (only then is "+" decoded as one) */
  private readonly spaced: boolean;

  constructor(secrets: ReadonlyArray<{ name: string; value: string }>) {
    for (const { name, value } of secrets) {
      if (Buffer.byteLength(value, 'utf8') < MIN_SECRET_BYTES) this.unchecked.push(name);
      else this.patterns.push(...patternsOf(name, value));
    }
    // one pattern per (bytes, case) across secrets: the first secret named keeps a value two share
    const seen = new Set<string>();
    this.patterns = this.patterns.filter((p) => {
      const key = patternKey(p.bytes, p.anyCase);
      return !seen.has(key) && !!seen.add(key);
    });
    this.longest = this.patterns.reduce((n, p) => Math.max(n, p.bytes.length), 0);
    this.automaton = build(this.patterns);
    this.spaced = secrets.some(({ value }) => Buffer.byteLength(value, 'utf8') >= MIN_SECRET_BYTES && value.includes(' '));
  }

  /** the patterns checked (for a note at load: how many, of how many secrets) */
  get patternCount(): number {
    return this.patterns.length;
  }

  /** the memory of the automaton's table, in bytes (4 x states x classes of byte) */
  get tableBytes(): number {
    return this.automaton.delta.byteLength;
  }

  /**
   * A whole text or bytes (a URL, a header value, a body held whole): checked as it is, then, when it has a "%" or
   * a "+", percent-decoded (up to 3 times, for a value encoded twice) and form-decoded ("+" as a space), so a value
   * written half-encoded is found too.
   */
  findIn(data: string | Buffer): SecretHit | undefined {
    if (this.patterns.length === 0) return undefined;
    const raw = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const found = this.scan(raw, 0, EMPTY).hit;
    if (found) return found;
    // decoded, only the stretches around what decoding changed are scanned: the rest was scanned as it was
    let text = raw;
    for (let round = 0; round < 3 && text.includes(round === 0 ? '%' : '%25'); round++) {
      const changed: number[] = [];
      const decoded = percentDecode(text, false, changed);
      if (changed.length === 0) break;
      const hit = this.scanAround(decoded, changed);
      if (hit) return decodedForm(hit);
      text = decoded;
    }
    // "+" as a space matters only to a value with a space
    if (this.spaced && raw.includes(0x2b)) {
      const changed: number[] = [];
      const hit = this.scanAround(percentDecode(raw, true, changed), changed);
      if (hit) return decodedForm(hit);
    }
    return undefined;
  }

  /** Scans the stretches of data within a pattern's length of the positions given (ascending). */
  private scanAround(data: Uint8Array, positions: number[]): SecretHit | undefined {
    const reach = Math.max(1, this.longest) - 1;
    for (let k = 0; k < positions.length; ) {
      const from = Math.max(0, positions[k]! - reach);
      let to = Math.min(data.length, positions[k]! + reach + 1);
      for (k++; k < positions.length && positions[k]! - reach <= to; k++) to = Math.min(data.length, positions[k]! + reach + 1);
      const hit = this.scan(data.subarray(from, to), 0, EMPTY).hit;
      if (hit) return hit;
    }
    return undefined;
  }

  /** A streamed body: push its chunks in order; a value across chunks is found. Once found, every push says it again. */
  stream(): { push(chunk: Buffer): SecretHit | undefined } {
    let state = 0;
    let tail = Buffer.alloc(0);
    let found: SecretHit | undefined;
    const keep = Math.max(0, this.longest - 1);
    return {
      push: (chunk: Buffer): SecretHit | undefined => {
        if (found || this.patterns.length === 0) return found;
        const r = this.scan(chunk, state, tail);
        found = r.hit;
        state = r.state;
        if (chunk.length >= keep) tail = Buffer.from(chunk.subarray(chunk.length - keep));
        else {
          const joined = Buffer.concat([tail, chunk]);
          tail = joined.subarray(Math.max(0, joined.length - keep));
        }
        return found;
      },
    };
  }

  /** Runs the automaton over data from a state; `before` is what preceded data (for checking a match that began there). */
  private scan(data: Uint8Array, start: number, before: Uint8Array): { hit?: SecretHit; state: number } {
    const { cls, delta, terminalFrom } = this.automaton;
    let from = 0;
    let state = start;
    for (;;) {
      const at = runUntilTerminal(delta, cls, terminalFrom, data, from, state, box);
      state = box[0]!;
      if (at < 0) return { state };
      const hit = this.check(state, data, at, before);
      if (hit) return { hit, state };
      from = at + 1;
    }
  }

  /** The pattern that truly ends at data[end] (the automaton matched it with letters folded), if any. */
  private check(state: number, data: Uint8Array, end: number, before: Uint8Array): SecretHit | undefined {
    const { classes, terminalFrom, ends } = this.automaton;
    for (const index of ends[(state - terminalFrom) / classes]!) {
      const p = this.patterns[index]!;
      let ok = true;
      for (let k = 0; k < p.bytes.length && ok; k++) {
        if (p.anyCase?.[k]) continue;
        const at = end - p.bytes.length + 1 + k;
        const b = at >= 0 ? data[at] : before[before.length + at];
        ok = b === p.bytes[k];
      }
      if (ok) return { secret: p.secret, form: p.form };
    }
    return undefined;
  }
}

const box = new Int32Array(1);

/** The automaton from `state` over data[from..]: the index of the first byte that ends in a terminal state, or -1; the state reached in box[0]. */
function runUntilTerminal(delta: Int32Array, cls: Uint8Array, terminalFrom: number, data: Uint8Array, from: number, state: number, out: Int32Array): number {
  let s = state;
  const n = data.length;
  for (let i = from; i < n; i++) {
    s = delta[s + cls[data[i]!]!]!;
    if (s >= terminalFrom) {
      out[0] = s;
      return i;
    }
  }
  out[0] = s;
  return -1;
}

const hexValue = (b: number): number => (b >= 0x30 && b <= 0x39 ? b - 0x30 : b >= 0x61 && b <= 0x66 ? b - 0x57 : b >= 0x41 && b <= 0x46 ? b - 0x37 : -1);

/** %XX decoded (a "%" without two hex digits kept as it is), and "+" as a space when asked; `changed` gets the positions (in the output) of the bytes decoded. */
export function percentDecode(data: Uint8Array, plusAsSpace: boolean, changed?: number[]): Buffer {
  const src = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const out = Buffer.allocUnsafe(src.length);
  let n = 0;
  let i = 0;
  let pct = -2;
  let plus = plusAsSpace ? -2 : -1;
  while (i < src.length) {
    // each found once: the next "%" and "+" at or after i (-1: none left)
    if (pct !== -1 && pct < i) pct = src.indexOf(0x25, i);
    if (plus !== -1 && plus < i) plus = src.indexOf(0x2b, i);
    const next = pct < 0 ? plus : plus < 0 ? pct : Math.min(pct, plus);
    if (next < 0) {
      n += src.copy(out, n, i);
      break;
    }
    n += src.copy(out, n, i, next);
    i = next + 1;
    if (next === plus) {
      changed?.push(n);
      out[n++] = 0x20;
      continue;
    }
    const hi = next + 2 < src.length ? hexValue(src[next + 1]!) : -1;
    const lo = hi >= 0 ? hexValue(src[next + 2]!) : -1;
    if (lo >= 0) {
      changed?.push(n);
      out[n++] = hi * 16 + lo;
      i = next + 3;
    } else out[n++] = 0x25;
  }
  return out.subarray(0, n);
}

/**
 * Bounds the bytes of request bodies held at once across all requests (the gateway's memory under many parallel
 * uploads). take(n) resolves when n bytes fit, in the order asked (a large body is not starved by small ones); n
 * larger than the whole budget rejects at once. give(n) returns them. A signal that aborts while waiting rejects
 * and takes nothing.
 */
export class ByteBudget {
  private used = 0;
  private readonly waiting: Array<{ n: number; resolve: () => void }> = [];

  constructor(readonly totalBytes: number) {
    if (!(Number.isSafeInteger(totalBytes) && totalBytes > 0)) throw new Error(`a byte budget must be a positive whole number of bytes, not ${totalBytes}`);
  }

  get inUse(): number {
    return this.used;
  }

  take(n: number, signal?: AbortSignal): Promise<void> {
    if (!(Number.isSafeInteger(n) && n >= 0)) return Promise.reject(new Error(`cannot take ${n} bytes of the body budget: a count of bytes is a whole number, 0 or more`));
    if (n > this.totalBytes) {
      return Promise.reject(new Error(`a body of ${n} bytes is larger than the ${this.totalBytes} bytes the gateway holds for all request bodies at once`));
    }
    if (signal?.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
    // a request without a body holds nothing: it never waits behind bodies that do
    if (n === 0) return Promise.resolve();
    if (this.waiting.length === 0 && this.used + n <= this.totalBytes) {
      this.used += n;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const entry = {
        n,
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        const at = this.waiting.indexOf(entry);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal?.reason ?? new Error('aborted'));
        this.drain(); // the one aborted may have held back smaller ones behind it
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  give(n: number): void {
    if (!(Number.isSafeInteger(n) && n >= 0) || n > this.used) throw new Error(`cannot give back ${n} bytes of the body budget: ${this.used} are in use`);
    this.used -= n;
    this.drain();
  }

  private drain(): void {
    while (this.waiting.length > 0 && this.used + this.waiting[0]!.n <= this.totalBytes) {
      const first = this.waiting.shift()!;
      this.used += first.n;
      first.resolve();
    }
  }
}
