/**
 * Which addresses an allowed name may lead to. An allowed name is a host on
 * the internet: never this machine (any of its addresses: its interfaces,
 * its bridges), never loopback, link-local (the cloud's metadata endpoint),
 * unspecified, multicast or reserved; and a network this machine is directly
 * on (its LAN, its bridges, whatever range they use) or a range that is not
 * the internet (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7, the
 * benchmarking and protocol ranges) only where the runner was told to allow
 * it (`--egress-private`). IPv6 forms that carry an IPv4 address (mapped,
 * NAT64, 6to4) are judged by that address. Pure.
 */
import net from 'node:net';

export interface AddressPolicy {
  /** every address of the machine the runner runs on: never reached, whatever else is allowed */
  hostAddresses: readonly string[];
  /** private ranges (CIDR) a step may reach: a company mirror, a test's fake internet */
  privateAllowed: readonly string[];
  /** the networks this machine is directly on (CIDR): its neighbours are not the internet either */
  hostNetworks?: readonly string[];
}

const NEVER: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 96, 'ipv6'], // unspecified, loopback, IPv4-compatible
  ['fe80::', 10, 'ipv6'],
  ['fec0::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
  ['2001::', 32, 'ipv6'], // Teredo: an IPv4 address inside, obfuscated
];

/** Not the internet: private (RFC 1918, CGNAT, ULA) and special-purpose ranges (IANA's registries) a host might still use inside. */
const PRIVATE: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['10.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['198.18.0.0', 15, 'ipv4'], // benchmarking (and the fake-IP answers of local proxies)
  ['fc00::', 7, 'ipv6'],
  ['100::', 64, 'ipv6'], // discard
  ['64:ff9b:1::', 48, 'ipv6'], // local NAT64
];

const never = new net.BlockList();
for (const [a, p, t] of NEVER) never.addSubnet(a, p, t);
const privateRanges = new net.BlockList();
for (const [a, p, t] of PRIVATE) privateRanges.addSubnet(a, p, t);

/** The IPv4 address an IPv6 one carries (`::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002:AABB:CCDD::`), if any. */
export function embeddedIPv4(ip: string): string | undefined {
  if (!net.isIPv6(ip)) return undefined;
  const words = expandIPv6(ip);
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zeros = (from: number, to: number) => words.slice(from, to).every((w) => w === 0);
  if (zeros(0, 5) && words[5] === 0xffff) return v4(words[6]!, words[7]!);
  if (words[0] === 0x64 && words[1] === 0xff9b && zeros(2, 6)) return v4(words[6]!, words[7]!);
  if (words[0] === 0x2002) return v4(words[1]!, words[2]!);
  return undefined;
}

/** The eight 16-bit words of an IPv6 address (already known to be one). */
function expandIPv6(ip: string): number[] {
  let s = ip.toLowerCase().replace(/%.*$/, '');
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    s = s.slice(0, -dotted[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? (s.split('::') as [string, string]) : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const mid = tail === undefined ? [] : Array(8 - h.length - t.length).fill('0');
  return [...h, ...mid, ...t].map((w) => parseInt(w, 16));
}

/** The canonical form of an address, for comparing with this machine's (IPv6 compressed, IPv4-mapped as IPv4). */
export function canonicalAddress(ip: string): string {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (net.isIPv4(bare)) return bare;
  if (!net.isIPv6(bare)) return bare;
  const words = expandIPv6(bare);
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) return embeddedIPv4(bare)!;
  return words.map((w) => w.toString(16)).join(':');
}

/** Why a step may not reach `ip` through its gateway, in words; undefined when it may. */
export function addressProblem(ip: string, policy: AddressPolicy): string | undefined {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const type = net.isIPv4(bare) ? 'ipv4' : net.isIPv6(bare) ? 'ipv6' : undefined;
  if (!type) return 'not an address';
  const inner = type === 'ipv6' ? embeddedIPv4(bare) : undefined;
  if (inner) {
    const why = addressProblem(inner, policy);
    return why && `${why} (as ${bare})`;
  }
  const canonical = canonicalAddress(bare);
  if (policy.hostAddresses.some((a) => canonicalAddress(a) === canonical)) return 'an address of this machine';
  if (never.check(bare, type)) return 'a loopback, link-local, multicast or reserved address';
  const allowed = inRanges(bare, type, policy.privateAllowed);
  if (!allowed && inRanges(bare, type, policy.hostNetworks ?? [])) {
    return "on a network this machine is on (its LAN or a bridge), not the internet (allow its range with --egress-private on runner exec or serve)";
  }
  if (!allowed && privateRanges.check(bare, type)) {
    return 'a private or special-purpose address, not the internet (allow its range with --egress-private on runner exec or serve)';
  }
  return undefined;
}

function inRanges(ip: string, type: 'ipv4' | 'ipv6', cidrs: readonly string[]): boolean {
  const list = new net.BlockList();
  for (const c of cidrs) {
    const parsed = parseCidr(c);
    if (typeof parsed !== 'string') list.addSubnet(parsed.address, parsed.prefix, parsed.type);
  }
  return list.check(ip, type);
}

/** A CIDR (`10.20.0.0/16`, `fd00::/8`), or a message saying what is wrong with it. */
export function parseCidr(text: string): { address: string; prefix: number; type: 'ipv4' | 'ipv6' } | string {
  const m = /^([^/\s]+)\/(\d{1,3})$/.exec(text.trim());
  const address = m?.[1] ?? '';
  const type = net.isIPv4(address) ? 'ipv4' : net.isIPv6(address) ? 'ipv6' : undefined;
  const prefix = Number(m?.[2]);
  if (!m || !type) return `${JSON.stringify(text)} is not a CIDR range: write an address and a prefix length, like 10.20.0.0/16 or fd00::/8`;
  if (prefix > (type === 'ipv4' ? 32 : 128)) return `${JSON.stringify(text)} has a prefix longer than an ${type === 'ipv4' ? 'IPv4' : 'IPv6'} address`;
  return { address, prefix, type };
}

/** `CIDR[,CIDR]` as given to --egress-private or RUNNER_EGRESS_PRIVATE: the ranges, or what is wrong. */
export function parseCidrList(text: string | undefined): string[] | string {
  const items = (text ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of items) {
    const parsed = parseCidr(item);
    if (typeof parsed === 'string') return `--egress-private: ${parsed}`;
  }
  return items;
}
