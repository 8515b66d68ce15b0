/**
 * The agent gateway's host allowlist: entries are exact DNS names
 * (`api.anthropic.com`) or a wildcard over the subdomains of a name with at
 * least two labels (`*.github.com`, which does not match `github.com` itself),
 * each with an optional port (`git.example.com:8443`). An entry without a
 * port allows port 80 for plain HTTP and 443 for a TLS tunnel; one with a
 * port allows that port. IP addresses are never allowed, whether as entries
 * or as requested hosts, and neither is anything a URL parser might read in
 * another way. Pure.
 */

const MAX_NAME = 253;
const MAX_LABEL = 63;
const LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
/** A last label that WHATWG URL parsing reads as an IPv4 number (`10.0.0.1`, `0x7f`, `foo.123`). */
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/;
const EXAMPLE = 'like github.com or *.github.com';

/** What is wrong with a host name already known to be lowercase and trimmed, or undefined. */
function nameProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (/[^a-z0-9.-]/.test(name)) return 'may contain only lowercase letters, digits, hyphens and dots (an internationalised name in its xn-- form)';
  if (name.length > MAX_NAME) return `is longer than ${MAX_NAME} characters`;
  const labels = name.split('.');
  if (NUMERIC_LABEL.test(labels[labels.length - 1]!)) {
    return labels.every((l) => /^[0-9]+$/.test(l)) ? 'is an IP address' : 'ends in a number, so URLs read it as an IP address';
  }
  for (const label of labels) {
    if (label === '') return 'has an empty label (a leading, trailing or doubled dot)';
    if (label.length > MAX_LABEL) return `has a label longer than ${MAX_LABEL} characters`;
    if (!LABEL.test(label)) return 'has a label that starts or ends with a hyphen';
  }
  return undefined;
}

/** The default port of each way out: plain HTTP, and a tunnel (which carries TLS only). */
export const DEFAULT_PORTS = { http: 80, tls: 443 } as const;

/** `pattern` cleaned of what people paste by habit: scheme, user, path, case, trailing dot, spaces; its port apart. */
function cleaned(pattern: string): { name: string; port: string | undefined; why: string[] } {
  const why: string[] = [];
  let s = pattern.trim();
  if (s !== pattern) why.push('no spaces');
  const lower = s.toLowerCase();
  if (lower !== s) why.push('lowercase');
  s = lower;
  const stripped = s.replace(/^[a-z][a-z0-9+.-]*:\/\//, '').replace(/[/?#].*$/s, '').replace(/^[^@]*@/, '');
  if (stripped !== s) why.push('no scheme or path');
  s = stripped;
  let port: string | undefined;
  const withPort = s.startsWith('[') ? undefined : /^([^:]*):([^:]*)$/.exec(s);
  if (withPort) {
    s = withPort[1]!;
    port = withPort[2]!;
  }
  if (s.endsWith('.') && !s.endsWith('..')) {
    s = s.slice(0, -1);
    why.push('no trailing dot');
  }
  return { name: s, port, why };
}

function portProblem(port: string): string | undefined {
  return /^[1-9][0-9]{0,4}$/.test(port) && Number(port) <= 65535 ? undefined : 'a port is a number from 1 to 65535';
}

/**
 * What is wrong with an allowlist entry, said so that the fix is plain, or
 * undefined when it is a valid exact name or `*.`-wildcard.
 */
export function hostPatternProblem(pattern: string): string | undefined {
  const q = JSON.stringify(pattern);
  const { name, port, why } = cleaned(pattern);
  if (name.startsWith('[') || /:.*:/.test(name)) {
    return `${q} is an IP address: the allowlist takes host names only, ${EXAMPLE}`;
  }
  const wildcard = name.startsWith('*.');
  const base = wildcard ? name.slice(2) : name;
  if (base.includes('*') || name === '*') {
    if (name === '*' || /^\*\.?[^.]*$/.test(name)) {
      return `${q} is too broad: a wildcard needs at least two labels after "*.", like *.github.com`;
    }
    return `${q} is not a host pattern: "*" may only be the whole first label, followed by a name with at least two labels, like *.github.com`;
  }
  const problem = nameProblem(base);
  if (problem === undefined) {
    if (wildcard && !base.includes('.')) {
      return `${q} is too broad: a wildcard needs at least two labels after "*.", like *.github.com`;
    }
    if (port !== undefined && portProblem(port)) return `${q} is not a host name with a port: ${portProblem(port)}, like git.example.com:8443`;
    const entry = port === undefined ? name : `${name}:${port}`;
    return why.length === 0 ? undefined : `${q} is not a host name: write ${entry} (${why.join('; ')})`;
  }
  if (problem.includes('IP address')) return `${q} ${problem}: the allowlist takes host names only, ${EXAMPLE}`;
  if (why.length > 0) return `${q} is not a host name: write a name ${EXAMPLE} (${why.join('; ')})`;
  return `${q} is not a host name: it ${problem}; write a name ${EXAMPLE}`;
}

/**
 * True when `host` (as requested: any case, one trailing dot allowed) is
 * matched by one of `patterns`. Entries that are not valid patterns (per
 * `hostPatternProblem`, ignoring case) match nothing; so does any IP literal
 * or a host with characters outside [a-z0-9.-].
 */
export function allows(patterns: readonly string[], host: string): boolean {
  return portsFor(patterns, host) !== undefined;
}

/**
 * The ports `host` may be reached on, by way (plain HTTP, a TLS tunnel), or
 * undefined when no entry names it.
 */
export function portsFor(patterns: readonly string[], host: string): { http: Set<number>; tls: Set<number> } | undefined {
  let h = host.toLowerCase();
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (nameProblem(h) !== undefined) return undefined;
  let ports: { http: Set<number>; tls: Set<number> } | undefined;
  for (const raw of patterns) {
    if (hostPatternProblem(raw.toLowerCase()) !== undefined) continue;
    const { name: p, port } = cleaned(raw.toLowerCase());
    const match = p.startsWith('*.') ? h.endsWith(p.slice(1)) : h === p; // h is a valid name: something non-empty precedes a wildcard's dot
    if (!match) continue;
    ports ??= { http: new Set(), tls: new Set() };
    if (port === undefined) {
      ports.http.add(DEFAULT_PORTS.http);
      ports.tls.add(DEFAULT_PORTS.tls);
    } else {
      ports.http.add(Number(port));
      ports.tls.add(Number(port));
    }
  }
  return ports;
}
