/**
 * Which gVisor probe containers (docker-gvisor.ts) were left behind by a
 * runner that died during its probe. A probe lives for a second: one that has
 * stopped and whose runner is gone, or that is older than any probe can be,
 * is garbage. Pure.
 */

/** `host/pid` of the runner that made a probe container */
export const PROBE_OWNER_LABEL = 'dev.runner.probe-owner';

/** past this, a probe that is not running is garbage whoever made it (its runner on another host, or a pid used again) */
const OLDEST_PROBE_SECONDS = 10 * 60;

export function probeOwner(host: string, pid: number): string {
  return `${host}/${pid}`;
}

export interface ProbeContainer {
  id: string;
  /** the engine's state: created, running, exited, … */
  state: string;
  createdSeconds: number;
  owner: string | undefined;
}

/** The ids of the probes to remove: never a running one, nor a recent one whose runner may still be reading it. */
export function staleProbes(list: readonly ProbeContainer[], here: { host: string; nowSeconds: number; alive: (pid: number) => boolean }): string[] {
  return list
    .filter((c) => c.state !== 'running')
    .filter((c) => {
      if (here.nowSeconds - c.createdSeconds > OLDEST_PROBE_SECONDS) return true;
      const m = /^(.*)\/(\d+)$/.exec(c.owner ?? '');
      // a runner on this host that is gone will never remove it
      return m !== null && m[1] === here.host && !here.alive(Number(m[2]));
    })
    .map((c) => c.id);
}
