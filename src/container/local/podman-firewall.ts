/**
 * Whether this host drops what steps' isolated networks send it on Podman (the rules scripts/ensure-podman.sh
 * adds: podman.ts ISOLATED_BRIDGE_PREFIX): asked of iptables, and of ip6tables where the host has IPv6 (a step on
 * Podman keeps IPv6, and the bridge's link-local address is the host's: the IPv4 rule alone left every service
 * listening on `::` open to it), once a process. The local engine runs on this host.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { isolationRuleProblem } from './podman.js';

let asked: Promise<string | undefined> | undefined;

function ask(tool: 'iptables' | 'ip6tables'): Promise<string | undefined> {
  return new Promise((resolve) =>
    execFile(tool, ['-w', '5', '-C', 'INPUT', '-i', 'rnri+', '-j', 'DROP'], { timeout: 10_000 }, (err, _out, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : String((err as { code?: unknown }).code ?? 'failed')) : 0;
      resolve(isolationRuleProblem(code, String(stderr), tool));
    }),
  );
}

/** Whether this host speaks IPv6 at all (then a step's bridge has a link-local address of the host's). */
function hostHasIpv6(): boolean {
  try {
    return readFileSync('/proc/sys/net/ipv6/conf/all/disable_ipv6', 'utf8').trim() !== '1';
  } catch {
    return false;
  }
}

/** Why the runner cannot count on the rules, or undefined when iptables (and ip6tables, with IPv6 on) say they are there. */
export function checkIsolationRule(): Promise<string | undefined> {
  return (asked ??= ask('iptables').then(async (v4) => v4 ?? (hostHasIpv6() ? ask('ip6tables') : undefined)));
}
