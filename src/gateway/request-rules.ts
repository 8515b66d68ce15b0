/**
 * The method and path rules of an inspected host, judged on a request as its
 * upstream will read it. Pure: the gateway's TLS-terminating proxy calls
 * normalizeTarget on the request target, forwards the normalized target (so
 * what was judged is what goes out), finds the host's rule with ruleFor and
 * asks ruleProblem; a refusal is a 403 with refusalLine.
 *
 * Normalization (RFC 3986, section 6.2.2, plus what servers are known to read
 * differently from a naive glob):
 * - percent-encodings of unreserved characters (ALPHA DIGIT - . _ ~) are
 *   decoded (`%2e` is `.`, `%41` is `A`); every other percent-encoding is kept,
 *   its hex digits upper-cased; `%00`, a `%` without two hex digits and
 *   percent-encoded bytes that are not UTF-8 (the overlong `%C0%AE`, once read
 *   as `.`) are refused, and so is a dot, slash or backslash encoded twice
 *   (`%252e`, `%252F`, which a server that decodes twice reads as `.` or `/`);
 * - dot segments are resolved (`..` above the root is refused); a dot segment
 *   with parameters (`..;x`, which Java servers read as `..`) or next to an
 *   encoded slash (`..%2F`) is refused; empty segments (`//`) are dropped;
 * - a backslash, a fragment, a space, a control or a non-ASCII character is
 *   refused; the query is kept as it was, and not judged.
 * An encoded slash or backslash (`%2F`, `%5C`) is kept: the upstream may read
 * it as a separator, so a glob's `*` and `**` never match it (a glob that
 * writes `%2F` does: `/@acme%2F*`, npm's scoped packages).
 */
import type { InspectedHost } from './config.js';

export interface Target {
  path: string;
  /** what followed the first '?', as it was sent ('' when none) */
  query: string;
}

/** The longest request target judged; Node's own limit on a request's head (16 KiB) is near. */
export const MAX_TARGET_LENGTH = 16384;

const UNRESERVED = /[A-Za-z0-9\-._~]/;
const HEX = /^[0-9A-Fa-f]{2}$/;
const ENCODED_SEPARATOR = /(%2F|%5C)/;
/** a dot, slash or backslash encoded twice or more (`%252e`, `%25252F`): a server that decodes twice reads `.`, `/` or `\\` */
const DOUBLE_ENCODED = /%25(?:25)*(?:2E|2F|5C)/i;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The request target (origin-form `/a/b?x`, or the path and query of an absolute URL) as the upstream will read it,
 * normalized, or why it is refused.
 */
export function normalizeTarget(raw: string): Target | { problem: string } {
  if (raw.length > MAX_TARGET_LENGTH) return { problem: `the request target is ${raw.length} characters long, more than the ${MAX_TARGET_LENGTH} the gateway judges` };
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) return { problem: `the request target has a space, control or non-ASCII character at position ${i} (send it percent-encoded)` };
  }
  if (raw.includes('#')) return { problem: 'the request target has a fragment (#), which is never sent to a server' };
  let rest = raw;
  if (!raw.startsWith('/')) {
    if (raw === '*') return { problem: 'the request target "*" (OPTIONS to the whole server) has no path to judge' };
    const origin = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?]*/.exec(raw);
    if (!origin) return { problem: 'the request target is neither a path starting with "/" nor an absolute URL' };
    rest = raw.slice(origin[0].length);
    if (!rest.startsWith('/')) rest = `/${rest}`;
  }
  const q = rest.indexOf('?');
  const rawPath = q < 0 ? rest : rest.slice(0, q);
  const query = q < 0 ? '' : rest.slice(q + 1);
  if (rawPath.includes('\\')) return { problem: 'the path has a backslash, which some servers read as "/" (send it as %5C, or not at all)' };

  const bytes: number[] = [];
  const segments: string[] = [];
  for (const seg of rawPath.slice(1).split('/')) {
    let out = '';
    for (let i = 0; i < seg.length; i++) {
      const ch = seg[i]!;
      if (ch !== '%') {
        out += ch;
        bytes.push(ch.charCodeAt(0));
        continue;
      }
      const hex = seg.slice(i + 1, i + 3);
      if (!HEX.test(hex)) return { problem: `the path has a "%" not followed by two hex digits ("${seg.slice(i, i + 3)}")` };
      const byte = parseInt(hex, 16);
      if (byte === 0) return { problem: 'the path has an encoded NUL (%00)' };
      const decoded = String.fromCharCode(byte);
      out += UNRESERVED.test(decoded) ? decoded : `%${hex.toUpperCase()}`;
      bytes.push(byte);
      i += 2;
    }
    if (DOUBLE_ENCODED.test(out)) return { problem: `the path has a dot or separator encoded twice ("${seg}"), which a server that decodes twice reads as "." or "/"` };
    segments.push(out);
  }
  try {
    utf8.decode(Uint8Array.from(bytes));
  } catch {
    return { problem: 'the path has percent-encoded bytes that are not UTF-8 (an overlong form like %C0%AE, which some servers read as ".")' };
  }

  const kept: string[] = [];
  let trailingSlash = false;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    const last = i === segments.length - 1;
    if (seg.startsWith('.') || seg.includes('%')) {
      const parts = seg.split(ENCODED_SEPARATOR).filter((_, k) => k % 2 === 0);
      for (const part of parts) {
        const base = part.split(';')[0];
        if ((base === '.' || base === '..') && (part !== base || parts.length > 1)) {
          return { problem: `the path has a dot segment with parameters or an encoded separator ("${seg}"), which some servers read as "${base}"` };
        }
      }
    }
    if (seg === '..') {
      if (kept.length === 0) return { problem: 'the path goes above the root ("..")' };
      kept.pop();
      trailingSlash = last;
    } else if (seg === '.' || seg === '') {
      trailingSlash = last;
    } else {
      kept.push(seg);
      trailingSlash = false;
    }
  }
  const path = `/${kept.join('/')}${trailingSlash && kept.length > 0 ? '/' : ''}`;
  return { path, query };
}

/** The rule of the inspected host for `host` (exact names first, then the longest `*.` suffix), or undefined. host has no port; any case, a trailing dot or not. */
export function ruleFor(hosts: readonly InspectedHost[], host: string): InspectedHost | undefined {
  // a trailing dot names the same host (the allowlist takes it): without this, `CONNECT api.github.com.:443` was an uninspected tunnel
  const name = host.toLowerCase().replace(/\.$/, '');
  const exact = hosts.find((h) => !h.host.startsWith('*.') && h.host.toLowerCase() === name);
  if (exact) return exact;
  let best: InspectedHost | undefined;
  for (const h of hosts) {
    if (!h.host.startsWith('*.')) continue;
    const suffix = h.host.slice(1).toLowerCase(); // '.github.com'
    if (name.length > suffix.length && name.endsWith(suffix) && (!best || suffix.length > best.host.length - 1)) best = h;
  }
  return best;
}

/** An HTTP method is a token (RFC 9110, 5.6.2); methods are short. */
const METHOD = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/;

/**
 * Why this method and normalized path are refused by the rule (undefined: allowed). The method is compared
 * upper-cased; one that is not a token (`GET `, `G\0ET`) is refused whatever the rule. paths are globs matched
 * against the whole path, case-sensitively: `*` is any run of characters within one segment (none included),
 * `**` as a whole segment any number of segments (none included: `/repos/acme/app/**` matches `/repos/acme/app`).
 */
export function ruleProblem(rule: InspectedHost, method: string, path: string): string | undefined {
  if (!METHOD.test(method)) return `the method ${JSON.stringify(method)} is not an HTTP method`;
  const m = method.toUpperCase();
  if (rule.methods && !rule.methods.some((allowed) => allowed.toUpperCase() === m)) return `the method ${m} is not one of ${rule.methods.join(', ')}`;
  if (!rule.paths) return undefined;
  if (!path.startsWith('/')) return `the path ${shown(path)} does not start with "/"`;
  if (rule.paths.some((glob) => globMatches(glob, path))) return undefined;
  if (ENCODED_SEPARATOR.test(path)) {
    return `the path ${shown(path)} has an encoded "/" or "\\" (%2F, %5C), which the upstream may read as a separator: "*" and "**" never match it, only a glob that writes it`;
  }
  return `the path ${shown(path)} matches none of ${rule.paths.join(', ')}`;
}

/** The one line of a 403's body (ending in a newline): what was refused, what the rule allows, and how to allow more. */
export function refusalLine(host: string, method: string, path: string, rule: InspectedHost, reason: string): string {
  const m = METHOD.test(method) ? method.toUpperCase() : JSON.stringify(method);
  const entry = rule.rule ?? `{ host: ${rule.host}${rule.methods ? `, methods: [${rule.methods.join(', ')}]` : ''}${rule.paths ? `, paths: [${rule.paths.map((p) => JSON.stringify(p)).join(', ')}]` : ''} }`;
  const allows = `${rule.methods ? rule.methods.join(', ') : 'any method'} on ${rule.paths ? rule.paths.join(', ') : 'any path'}`;
  const line = `runner gateway: ${m} ${host}${shown(path)} refused (${reason}); its egress entry ${entry} allows ${allows}; to allow more, add the method or path to that entry's methods: or paths: in the pipeline file`;
  return `${oneLine(line)}\n`;
}

/**
 * Why a glob of paths: is not valid (undefined: valid), for the file's loader. A glob starts with "/", is written
 * as a normalized path would be (no "." or ".." segment, no "//" but a trailing "/", no query, fragment, backslash
 * or space), has `**` only as a whole segment, and "%" only as a percent-encoding.
 */
export function pathGlobProblem(glob: string): string | undefined {
  const q = JSON.stringify(glob);
  if (!glob.startsWith('/')) return `${q} is not a path glob: it must start with "/", like "/repos/acme/app/**"`;
  if (glob.length > 1024) return `${q} is not a path glob: it is longer than 1024 characters`;
  if (/[\s\u0000-\u001f\u007f-\uffff]/.test(glob)) return `${q} is not a path glob: it has a space, control or non-ASCII character (write it percent-encoded)`;
  if (/[?#]/.test(glob)) return `${q} is not a path glob: the query and fragment are not judged, so write the path only`;
  if (glob.includes('\\')) return `${q} is not a path glob: a backslash is refused in every path; write %5C if you mean it`;
  if (/%(?![0-9A-Fa-f]{2})/.test(glob)) return `${q} is not a path glob: a "%" must start a percent-encoding like %2F`;
  const segments = glob.slice(1).split('/');
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    if (seg === '' && i < segments.length - 1) return `${q} is not a path glob: it has an empty segment ("//"), which the gateway removes from every path`;
    if (seg === '.' || seg === '..') return `${q} is not a path glob: it has a "${seg}" segment, which the gateway resolves in every path`;
    if (seg.includes('**') && seg !== '**') return `${q} is not a path glob: "**" must be a whole segment, like "/repos/**" ("*" matches within one segment)`;
  }
  return undefined;
}

/** Whether the glob matches the whole normalized path. Work is bounded by (segments of the path) x (segments of the glob) x (segment lengths). */
export function globMatches(glob: string, path: string): boolean {
  const g = normalizeGlob(glob).slice(1).split('/');
  const p = path.slice(1).split('/');
  // reach[j]: the glob's first j segments can match the path's segments read so far
  let reach = closure(g, Array.from({ length: g.length + 1 }, (_, j) => j === 0));
  for (const seg of p) {
    const next: boolean[] = new Array<boolean>(g.length + 1).fill(false);
    for (let j = 0; j < g.length; j++) {
      if (!reach[j]) continue;
      if (g[j] === '**') {
        if (!hasEncodedSeparator(seg)) next[j] = true;
      } else if (segmentMatches(g[j]!, seg)) next[j + 1] = true;
    }
    reach = closure(g, next);
    if (!reach.includes(true)) return false;
  }
  return reach[g.length]!;
}

function hasEncodedSeparator(seg: string): boolean {
  return seg.includes('%') && ENCODED_SEPARATOR.test(seg);
}

/** `**` matches no segment too: reaching it reaches what follows it. */
function closure(g: string[], reach: boolean[]): boolean[] {
  for (let j = 0; j < g.length; j++) if (reach[j] && g[j] === '**') reach[j + 1] = true;
  return reach;
}

/** A glob written like a path: unreserved percent-encodings decoded, the others upper-cased (as normalizeTarget does). */
function normalizeGlob(glob: string): string {
  return glob.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const ch = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
}

/** One segment against one glob segment: encoded separators must line up; `*` matches within the parts between them. */
function segmentMatches(glob: string, seg: string): boolean {
  if (!glob.includes('%') && !seg.includes('%')) return starMatches(glob, seg);
  const gp = glob.split(ENCODED_SEPARATOR);
  const sp = seg.split(ENCODED_SEPARATOR);
  if (gp.length !== sp.length) return false;
  for (let i = 0; i < gp.length; i++) {
    if (i % 2 === 1 ? gp[i] !== sp[i] : !starMatches(gp[i]!, sp[i]!)) return false;
  }
  return true;
}

/** `*` wildcards over a string with no separator, backtracking to the last star only: O(glob x text) at worst. */
function starMatches(glob: string, text: string): boolean {
  let gi = 0;
  let ti = 0;
  let star = -1;
  let mark = 0;
  while (ti < text.length) {
    if (gi < glob.length && glob[gi] !== '*' && glob[gi] === text[ti]) {
      gi++;
      ti++;
    } else if (gi < glob.length && glob[gi] === '*') {
      star = gi++;
      mark = ti;
    } else if (star >= 0) {
      gi = star + 1;
      ti = ++mark;
    } else return false;
  }
  while (gi < glob.length && glob[gi] === '*') gi++;
  return gi === glob.length;
}

function shown(path: string): string {
  return path.length > 200 ? `${path.slice(0, 200)}…` : path;
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').replace(/[\u0000-\u001f\u007f]/g, '?');
}
