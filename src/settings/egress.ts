/**
 * Where steps' gateways reach out: the egress network, the private ranges an
 * allowed name may lead to, the name servers, and the company's proxy. From
 * the flags, else the environment. Pure.
 */
import { isIP } from 'node:net';
import { UsageError } from '../common/errors.js';
import { parseCidrList } from '../gateway/address-policy.js';
import { parseProxyUrl, shownProxy, type UpstreamProxy } from '../gateway/upstream-proxy.js';
import type { SettingsFlags } from './flags.js';

export interface EgressSettings {
  /** the docker network the gateways reach out on (default bridge) */
  network: string;
  /** private ranges an allowed host may resolve to (a company mirror); none by default */
  private: string[];
  /** name servers the gateways resolve allowed names with (RUNNER_EGRESS_DNS); absent: the engine's */
  dns?: string[];
  /** the company's proxy the gateways reach out through */
  proxy?: UpstreamProxy;
}

/** `warn`: what is allowed but likely not meant (a proxy the containers cannot reach). */
export function readEgress(values: SettingsFlags, env: NodeJS.ProcessEnv, warn: (message: string) => void): EgressSettings {
  const ranges = parseCidrList(values['egress-private'] ?? env.RUNNER_EGRESS_PRIVATE);
  if (typeof ranges === 'string') throw new UsageError(`${ranges} (--egress-private, or RUNNER_EGRESS_PRIVATE, takes CIDR[,CIDR])`);
  const dns = (env.RUNNER_EGRESS_DNS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const badDns = dns.find((a) => !isIP(a));
  if (badDns) throw new UsageError(`RUNNER_EGRESS_DNS: ${JSON.stringify(badDns)} is not an IP address (it takes name servers' addresses, comma-separated)`);
  const proxy = readProxy(values['egress-proxy'], env, warn);
  return {
    network: values['egress-network'] || env.RUNNER_EGRESS_NETWORK || 'bridge',
    private: ranges,
    ...(dns.length ? { dns } : {}),
    ...(proxy ? { proxy } : {}),
  };
}

/** --egress-proxy URL (`none`: no proxy), else RUNNER_EGRESS_PROXY, else the runner's own HTTPS_PROXY; NO_PROXY's names go direct. */
function readProxy(flag: string | undefined, env: NodeJS.ProcessEnv, warn: (m: string) => void): UpstreamProxy | undefined {
  // empty is unset, as for every other setting: `RUNNER_EGRESS_PROXY=` must not drop HTTPS_PROXY in silence (`none` says no proxy)
  const given = flag || env.RUNNER_EGRESS_PROXY || undefined;
  const inherited = given === undefined ? env.HTTPS_PROXY || env.https_proxy || undefined : undefined;
  const text = given ?? inherited;
  if (!text || text === 'none') return undefined;
  const where = given !== undefined ? (flag ? '--egress-proxy' : 'RUNNER_EGRESS_PROXY') : 'HTTPS_PROXY';
  const parsed = proxyOrProblem(text, env.NO_PROXY ?? env.no_proxy);
  if (typeof parsed === 'string') {
    if (inherited) {
      warn(`the gateways reach out directly: ${where} ${parsed} (give one with --egress-proxy, or --egress-proxy none to say so)`);
      return undefined;
    }
    throw new UsageError(`${where}: ${parsed}`);
  }
  // the gateways run in containers, where loopback is the container itself
  if (parsed.host === 'localhost' || /^127\./.test(parsed.host) || parsed.host === '::1') {
    const why = `${where} ${shownProxy(text)} is on loopback, which in a gateway's container is the container itself: give an address the containers reach (the host's on the egress network, like http://172.17.0.1:3128)`;
    if (inherited) {
      warn(`the gateways reach out directly: ${why}, or --egress-proxy none`);
      return undefined;
    }
    throw new UsageError(why);
  }
  return parsed;
}

/** parseProxyUrl, with a % that starts no escape in the user or password said as such (decoding it throws "URI malformed"). */
function proxyOrProblem(text: string, noProxy: string | undefined): UpstreamProxy | string {
  try {
    return parseProxyUrl(text, noProxy);
  } catch (err) {
    if (!(err instanceof URIError)) throw err;
    return `${shownProxy(text)} has a % in its user or password that is not followed by two hex digits: write a % there as %25`;
  }
}
