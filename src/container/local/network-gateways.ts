/**
 * The addresses this machine has on the engine's networks (their gateways): what the engine says in each network's
 * IPAM config, else, for a bridge whose config names no gateway (Docker's default bridge on some machines says only
 * its subnet), the IPv4 address of its interface on this machine (`docker0`, or `br-` and the network id's first 12
 * characters), else its subnet's first address, the engine's default for a bridge (an interface no container is
 * attached to is not in Node's list). Pure.
 */
import type os from 'node:os';

export interface NetworkFacts {
  Id: string;
  Driver?: string;
  IPAM?: { Config?: Array<{ Gateway?: string; Subnet?: string }> | null } | null;
  Options?: Record<string, string> | null;
}

export function networkGatewaysOf(networks: readonly NetworkFacts[], interfaces: ReturnType<typeof os.networkInterfaces>): string[] {
  return networks.flatMap((n) => {
    const said = (n.IPAM?.Config ?? []).flatMap((c) => (c.Gateway ? [c.Gateway.replace(/\/\d+$/, '')] : []));
    if (said.length || n.Driver !== 'bridge') return said;
    const name = n.Options?.['com.docker.network.bridge.name'] || `br-${n.Id.slice(0, 12)}`;
    const found = (interfaces[name] ?? []).filter((a) => a.family === 'IPv4').map((a) => a.address);
    if (found.length) return found;
    // an interface no container is attached to is down to the system's list: the engine's default, the subnet's first address
    return (n.IPAM?.Config ?? []).flatMap((c) => firstAddress(c.Subnet) ?? []);
  });
}

/** The first host address of an IPv4 subnet (`172.17.0.0/16`: 172.17.0.1), which an engine gives a bridge by default. Pure. */
export function firstAddress(subnet: string | undefined): string | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/(\d+)$/.exec(subnet ?? '');
  if (!m) return undefined;
  const bits = Number(m[5]);
  if (bits < 8 || bits > 30) return undefined;
  const n = ((Number(m[1]) << 24) >>> 0) + (Number(m[2]) << 16) + (Number(m[3]) << 8) + Number(m[4]);
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  const first = (((n & mask) >>> 0) + 1) >>> 0;
  return [first >>> 24, (first >>> 16) & 255, (first >>> 8) & 255, first & 255].join('.');
}
