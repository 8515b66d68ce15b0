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
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch {
    return `${JSON.stringify(redacted(text))} is not a proxy URL: write one like http://proxy.example.com:3128`;
  }
  if (url.protocol !== 'http:') return `${url.protocol}// proxies are not supported: give the proxy's plain-HTTP address, like http://${url.hostname}:3128 (the steps' TLS goes through it end to end)`;
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) return `${JSON.stringify(redacted(text))} has a path: a proxy URL is http://host:port`;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!host) return `${JSON.stringify(redacted(text))} names no host`;
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  return {
    host,
    port: Number(url.port || 80),
    ...(user || pass ? { authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` } : {}),
    noProxy: parseNoProxy(noProxy),
  };
}

/** A proxy URL without its password, for messages. */
export function redacted(text: string): string {
  return text.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@');
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
