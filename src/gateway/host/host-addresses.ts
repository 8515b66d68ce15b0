/**
 * Every address of the machine the runner runs on, for its gateways to
 * refuse: an allowed name that resolves to one of them would reach the
 * host's own services. Read from the kernel's tables (every local address,
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

export async function thisMachineAddresses(runtime: ContainerRuntime): Promise<string[]> {
  const found = new Set<string>();
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) found.add(a.address);
  for (const a of localAddressesFromFibTrie(await readFile('/proc/net/fib_trie', 'utf8').catch(() => ''))) found.add(a);
  for (const a of addressesFromIfInet6(await readFile('/proc/net/if_inet6', 'utf8').catch(() => ''))) found.add(a);
  for (const a of await runtime.networkGateways()) found.add(a);
  return [...found].sort();
}
