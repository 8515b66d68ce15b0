/**
 * The company's proxy, when the gateways must reach out through one
 * (`--egress-proxy`, or the runner's own HTTPS_PROXY): its address, the
 * names that bypass it (NO_PROXY), and a tunnel through it by CONNECT. The
 * gateway still decides what may go out; the proxy only carries it. The
 * parsers are pure; connectThrough opens one connection.
 */
import net from 'node:net';

export interface UpstreamProxy {
  host: string;
  port: number;
  /** the Proxy-Authorization header's value, from the URL's user and password */
  authorization?: string;
  /** NO_PROXY's entries: names (and `.suffix`es, `*`) reached directly */
  noProxy: string[];
}

/**
 * `http://[user:pass@]host:port` as a proxy, or what is wrong with it. Only
 * plain-HTTP proxies: the tunnel's TLS is the step's own, end to end.
 */
export function parseProxyUrl(text: string, noProxy: string | undefined): UpstreamProxy | string {
  const url = asUrl(text);
  if (!url) return `${shownProxy(text)} is not a proxy URL: write one like http://user:password@proxy.example.com:3128 (a / @ : # or ? in the password written %2F %40 %3A %23 %3F)`;
  if (url.protocol !== 'http:') return `${url.protocol}// proxies are not supported: give the proxy's plain-HTTP address, like http://${url.hostname}:3128 (the steps' TLS goes through it end to end)`;
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) return `${shownProxy(text)} has a path: a proxy URL is http://host:port (a / # or ? in its password written %2F %23 %3F)`;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!host) return `${shownProxy(text)} names no host`;
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  return {
    host,
    port: Number(url.port || 80),
    ...(user || pass ? { authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` } : {}),
    noProxy: parseNoProxy(noProxy),
  };
}

/** The text as the URL it is read as (http:// when it names no scheme), or undefined. */
function asUrl(text: string): URL | undefined {
  try {
    return new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch {
    return undefined;
  }
}

/**
 * A proxy URL fit for a message: read as a URL (WHATWG, as parseProxyUrl
 * reads it), never cut by a pattern, and shown as its scheme, its user, `***`
 * for any password, its host and port. Whatever follows the host (a path, a
 * query, a fragment) is shown as `/…`, and not at all when it holds an `@`: a
 * password holding an unencoded `/`, `?` or `#` ends the URL's address there,
 * so its head reads as a host and port and its tail as a path. Text that is no
 * URL is not echoed at all. Pure.
 */
export function shownProxy(text: string): string {
  const url = asUrl(text);
  if (!url) return 'its value (not shown: it is not a URL, and may hold a password)';
  const after = `${url.pathname === '/' ? '' : url.pathname}${url.search}${url.hash}`;
  // `http://user:12/34@host`: an @ past the address means a password was cut at its / (the "port" its head)
  if (after.includes('@')) return 'its value (not shown: a password holding a / # or ? reads as an address and a path)';
  const user = url.username || url.password ? `${url.username}${url.password ? ':***' : ''}@` : '';
  return `${url.protocol}//${user}${url.host}${after ? '/…' : ''}`;
}

/** NO_PROXY as curl and most tools read it: comma- or space-separated names, `.suffix`, `*`, with an optional port. */
export function parseNoProxy(text: string | undefined): string[] {
  return (text ?? '')
    .split(/[,\s]+/)
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}

/** Whether a connection to host:port goes around the proxy. IP ranges in NO_PROXY are not read: the gateway reaches names only. */
export function bypassesProxy(noProxy: readonly string[], host: string, port: number): boolean {
  let h = host.toLowerCase();
  if (h.endsWith('.')) h = h.slice(0, -1);
  for (const raw of noProxy) {
    if (raw === '*') return true;
    const m = /^(.*?)(?::(\d+))?$/.exec(raw)!;
    if (m[2] !== undefined && Number(m[2]) !== port) continue;
    // `.example.com`, `*.example.com` and `example.com` all cover example.com's subdomains; the bare name covers itself too
    const name = m[1]!.replace(/^\*?\./, '');
    if (!name) continue;
    if (h === name || h.endsWith(`.${name}`)) return true;
  }
  return false;
}

/** How long the proxy has to answer a CONNECT. */
const CONNECT_MS = 30_000;
/** An answer's head larger than this is no proxy's. */
const MAX_HEAD = 16 * 1024;

/**
 * A connection to host:port through the proxy's CONNECT: resolves once the
 * proxy said 2xx, with any bytes that came after its answer put back.
 * Rejects with the proxy's status line when it refuses.
 */
export function connectThrough(proxy: UpstreamProxy, host: string, port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: proxy.host, port: proxy.port });
    let got = Buffer.alloc(0);
    const fail = (message: string, code = 'EPROXY') => {
      socket.destroy();
      reject(Object.assign(new Error(message), { code }));
    };
    const timer = setTimeout(() => fail(`the proxy ${proxy.host}:${proxy.port} did not answer CONNECT within ${CONNECT_MS / 1000} s`), CONNECT_MS);
    const onData = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf('\r\n\r\n');
      if (end === -1) {
        if (got.length > MAX_HEAD) fail(`the proxy ${proxy.host}:${proxy.port} answered CONNECT with no end to its headers`);
        return;
      }
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('error', onError);
      const status = got.subarray(0, got.indexOf('\r\n')).toString('latin1');
      if (!/^HTTP\/1\.[01] 2\d\d\b/.test(status)) return fail(`the proxy ${proxy.host}:${proxy.port} refused CONNECT ${host}:${port} (${status.slice(0, 200)})`);
      const rest = got.subarray(end + 4);
      socket.pause();
      if (rest.length) socket.unshift(rest);
      resolve(socket);
    };
    const onError = (err: Error) => {
      clearTimeout(timer);
      fail(`the proxy ${proxy.host}:${proxy.port} could not be reached (${err.message})`, 'EPROXY');
    };
    socket.on('data', onData);
    socket.on('error', onError);
    socket.once('connect', () => {
      const auth = proxy.authorization ? `proxy-authorization: ${proxy.authorization}\r\n` : '';
      const target = net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
      socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n${auth}\r\n`);
    });
  });
}
