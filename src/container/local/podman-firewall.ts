/**
 * Whether this host drops what steps' isolated networks send it on Podman (the rule scripts/ensure-podman.sh
 * adds: podman.ts ISOLATED_BRIDGE_PREFIX): asked of iptables, once a process. The local engine runs on this host.
 */
import { execFile } from 'node:child_process';
import { isolationRuleProblem } from './podman.js';

let asked: Promise<string | undefined> | undefined;

/** Why the runner cannot count on the rule, or undefined when iptables says it is there. */
export function checkIsolationRule(): Promise<string | undefined> {
  return (asked ??= new Promise((resolve) =>
    execFile('iptables', ['-w', '5', '-C', 'INPUT', '-i', 'rnri+', '-j', 'DROP'], { timeout: 10_000 }, (err, _out, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : String((err as { code?: unknown }).code ?? 'failed')) : 0;
      resolve(isolationRuleProblem(code, String(stderr)));
    }),
  ));
}
