/** Where steps' gateways reach out, for `runner exec` and `runner serve`: their flags, else the environment. */
import { isIP } from 'node:net';
import { UsageError } from '../common/errors.js';
import { parseCidrList } from '../gateway/address-policy.js';

export const EGRESS_FLAGS = {
  'egress-network': { type: 'string' },
  'egress-private': { type: 'string' },
} as const;

export interface EgressOptions {
  egressNetwork: string;
  egressPrivate: string[];
  /** name servers the gateways resolve allowed names with (RUNNER_EGRESS_DNS); absent: the engine's */
  egressDns?: string[];
}

export function egressOptions(values: { 'egress-network'?: string | undefined; 'egress-private'?: string | undefined }): EgressOptions {
  const ranges = parseCidrList(values['egress-private'] ?? process.env.RUNNER_EGRESS_PRIVATE);
  if (typeof ranges === 'string') throw new UsageError(`${ranges} (--egress-private, or RUNNER_EGRESS_PRIVATE, takes CIDR[,CIDR])`);
  const dns = (process.env.RUNNER_EGRESS_DNS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const badDns = dns.find((a) => !isIP(a));
  if (badDns) throw new UsageError(`RUNNER_EGRESS_DNS: ${JSON.stringify(badDns)} is not an IP address (it takes name servers' addresses, comma-separated)`);
  return {
    egressNetwork: values['egress-network'] || process.env.RUNNER_EGRESS_NETWORK || 'bridge',
    egressPrivate: ranges,
    ...(dns.length ? { egressDns: dns } : {}),
  };
}
