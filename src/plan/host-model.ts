/**
 * A model on the user's machine (Ollama, vLLM, llama.cpp on 127.0.0.1:11434):
 * whether an agent's base_url names this machine, and where the runner, a
 * process on it, reaches that model. A step's gateway runs in a container,
 * where 127.0.0.1 is the gateway itself, so such a model is reached through a
 * relay the runner opens (src/gateway/host/model-relay.ts). Pure.
 */

/** Names that mean "this machine" in a base_url, besides the loopback addresses and the machine's own. */
const THIS_MACHINE_NAMES = new Set(['localhost', 'host.docker.internal', 'host.containers.internal']);

/** The URL's host without IPv6 brackets, lower case, without a final dot. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
}

/** Whether a host name or address is the loopback (127.0.0.0/8, ::1, localhost and its subdomains) or 0.0.0.0. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost') || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::1' || h === '0:0:0:0:0:0:0:1' || h === '0.0.0.0' || h === '::ffff:127.0.0.1';
}

/**
 * Whether a base_url names this machine by a name that holds everywhere (the loopback, localhost,
 * host.docker.internal): what validate knows without asking the machine. Not an URL: false.
 */
export function namesThisMachine(baseUrl: string | undefined): boolean {
  const url = parse(baseUrl);
  if (!url) return false;
  const h = bareHost(url);
  return isLoopbackHost(h) || THIS_MACHINE_NAMES.has(h);
}

/** Where a model on this machine is, as the runner reaches it. */
export interface HostModel {
  /** the base_url as the file wrote it, for messages: "the model at http://127.0.0.1:11434" */
  shown: string;
  protocol: 'http:' | 'https:';
  /** the address the runner connects to (127.0.0.1 for host.docker.internal and 0.0.0.0) */
  host: string;
  port: number;
  /** the base_url's path (its API root), kept on the way through the relay */
  path: string;
}

/**
 * The model a base_url names on this machine by a loopback address, localhost or host.docker.internal, or
 * undefined when it names another host. (An address of the machine on a network the engine's containers are on,
 * a bridge's or the LAN's, the gateway reaches as it reaches any host: it needs no relay.) Pure.
 */
export function hostModel(baseUrl: string | undefined): HostModel | undefined {
  const url = parse(baseUrl);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return undefined;
  const h = bareHost(url);
  if (!isLoopbackHost(h) && !THIS_MACHINE_NAMES.has(h)) return undefined;
  // the names containers use for the host, and 0.0.0.0, mean the machine itself here: the runner is on it
  const host = h === 'localhost' || (isLoopbackHost(h) && h !== '0.0.0.0') ? h : '127.0.0.1';
  return {
    shown: `${url.protocol}//${url.host}`,
    protocol: url.protocol,
    host,
    port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    path: url.pathname.replace(/\/+$/, ''),
  };
}

function parse(baseUrl: string | undefined): URL | undefined {
  if (!baseUrl) return undefined;
  try {
    return new URL(baseUrl);
  } catch {
    return undefined;
  }
}
