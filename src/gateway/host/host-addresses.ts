/**
 * Every address of the machine the runner runs on, and every network it is
 * directly on (its LANs), for its gateways to refuse: an allowed name that
 * resolves to one of them would reach the host's own services or its
 * neighbours (a router's admin page, a NAS), whatever range they are in. Read from the kernel's tables (every local address,
 * on interfaces up or down: os.networkInterfaces() leaves out a bridge with
 * no carrier) and from the engine (its networks' gateways, which are this
 * machine's even when the runner itself runs in a container). The parsers
 * are pure.
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import type { ContainerRuntime } from '../../container/runtime.js';

/** The local IPv4 addresses in /proc/net/fib_trie: each `|-- a.b.c.d` followed by `/32 host LOCAL`. */
export function localAddressesFromFibTrie(text: string): string[] {
  const out = new Set<string>();
  let last: string | undefined;
  for (const line of text.split('\n')) {
    const leaf = /\|-- (\d+\.\d+\.\d+\.\d+)\s*$/.exec(line);
    if (leaf) last = leaf[1];
    else if (last && /^\s+\/32 host LOCAL/.test(line)) out.add(last);
  }
  return [...out];
}

/** The IPv6 addresses in /proc/net/if_inet6 (32 hex digits first on each line). */
export function addressesFromIfInet6(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const hex = /^([0-9a-f]{32})\s/i.exec(line)?.[1];
    if (hex) out.push(hex.match(/.{4}/g)!.map((w) => parseInt(w, 16).toString(16)).join(':'));
  }
  return out;
}

const hexV4 = (le: string) => [6, 4, 2, 0].map((i) => parseInt(le.slice(i, i + 2), 16)).join('.');
const bits = (n: number) => n.toString(2).replace(/0/g, '').length;

/** The networks in /proc/net/route reached without a gateway (directly attached), as CIDRs; not the default route. */
export function attachedNetworksFromRoute(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split('\n').slice(1)) {
    const [, dest, gateway, , , , , mask] = line.trim().split(/\s+/);
    if (!dest || !mask || !/^[0-9A-F]{8}$/i.test(dest) || !/^[0-9A-F]{8}$/i.test(mask) || dest === '00000000' || gateway !== '00000000') continue;
    out.add(`${hexV4(dest)}/${bits(parseInt(mask, 16))}`);
  }
  return [...out];
}

/** The IPv6 networks in /proc/net/ipv6_route reached without a next hop, on an interface other than lo; not the default. */
export function attachedNetworksFromIpv6Route(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || f[9] === 'lo' || !/^[0-9a-f]{32}$/i.test(f[0]!) || /[^0]/.test(f[4]!)) continue;
    const prefix = parseInt(f[1]!, 16);
    if (prefix === 0 || prefix === 128) continue;
    out.add(`${f[0]!.match(/.{4}/g)!.map((w) => parseInt(w, 16).toString(16)).join(':')}/${prefix}`);
  }
  return [...out];
}

/** The networks this machine is directly on: its LANs and its bridges. */
export async function thisMachineNetworks(): Promise<string[]> {
  const v4 = attachedNetworksFromRoute(await readFile('/proc/net/route', 'utf8').catch(() => ''));
  const v6 = attachedNetworksFromIpv6Route(await readFile('/proc/net/ipv6_route', 'utf8').catch(() => ''));
  return [...v4, ...v6].sort();
}

export async function thisMachineAddresses(runtime: ContainerRuntime): Promise<string[]> {
  const found = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) found.add(a.address);
  for (const a of localAddressesFromFibTrie(await readFile('/proc/net/fib_trie', 'utf8').catch(() => ''))) found.add(a);
  for (const a of addressesFromIfInet6(await readFile('/proc/net/if_inet6', 'utf8').catch(() => ''))) found.add(a);
  for (const a of await runtime.networkGateways()) found.add(a);
  return [...found].sort();
}
