/**
 * What Podman's Docker-compatible API needs said differently from Docker's,
 * for the local engine (docker.ts asks these once it knows the engine is
 * Podman). Pure: the engine's answers come in, options and verdicts go out.
 * docs/podman.md lists every difference found and what is done about each.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** Podman's root API socket (scripts/ensure-podman.sh starts it). */
export const PODMAN_ROOT_SOCKET = 'unix:///run/podman/podman.sock';

/** The socket `--engine podman` talks to: DOCKER_HOST (or CONTAINER_HOST) when set, else root's, else the user's. */
export function podmanSocket(env: NodeJS.ProcessEnv, uid: number | undefined): string {
  const given = env.CONTAINER_HOST || env.DOCKER_HOST;
  if (given) return given;
  if (uid === 0 || uid === undefined) return PODMAN_ROOT_SOCKET;
  return `unix://${env.XDG_RUNTIME_DIR || `/run/user/${uid}`}/podman/podman.sock`;
}

/** Whether the engine's `/version` answer is Podman's (its first component is the Podman Engine). */
export function isPodmanVersion(version: { Components?: Array<{ Name?: string }> | null } | undefined): boolean {
  return (version?.Components ?? []).some((c) => c.Name === 'Podman Engine');
}

/** Said after ownImageMissing on Podman: the recipes build into Docker's store, and Podman has one of its own. */
export const PODMAN_OWN_IMAGES =
  "; on Podman, which keeps a store of its own: build them with Docker, then copy them over with scripts/ensure-podman.sh (it runs docker save runner/NAME:latest | podman load for each)";

/**
 * An overlay mount (Mount.overlay) as Podman takes it: a bind with `O` and its upper and work directories. Docker's
 * way, an anonymous volume of the local driver with overlay options, Podman makes as a plain empty volume (the step
 * saw no cache).
 */
export function podmanOverlayBind(m: { source: string; target: string; overlay?: { upper: string; work: string } }): string {
  if (!m.overlay) throw new Error(`mount ${m.target} is no overlay: a bug in the runner`);
  for (const p of [m.source, m.target, m.overlay.upper, m.overlay.work]) {
    if (/[:,]/.test(p)) throw new Error(`an overlay's path cannot hold ':' or ',' on Podman (its bind syntax): ${JSON.stringify(p)}`);
  }
  return `${m.source}:${m.target}:O,upperdir=${m.overlay.upper},workdir=${m.overlay.work}`;
}

/** What of Podman's `/libpod/info` decides whether it can hold the runner's limits. */
export interface PodmanHost {
  rootless: boolean;
  /** `v1` or `v2` */
  cgroupVersion: string;
  /** on cgroup v2: the controllers this user's containers may use (rootless: those delegated to it) */
  cgroupControllers?: string[];
}

/** Reads the fields of `/libpod/info` that podmanRefusal needs. */
export function podmanHost(info: { host?: { security?: { rootless?: boolean }; cgroupVersion?: string; cgroupControllers?: string[] | null } }): PodmanHost {
  const h = info.host ?? {};
  return { rootless: h.security?.rootless === true, cgroupVersion: h.cgroupVersion ?? 'unknown', ...(h.cgroupControllers ? { cgroupControllers: h.cgroupControllers } : {}) };
}

/**
 * Whether this Podman leaves a container killed at its memory cap unsaid: 4.3 (conmon 2.1.6) on cgroup v1 leaves
 * State.OOMKilled false (exit 137) and sends no event, and the container's cgroup is gone when its exit is known.
 * On cgroup v2 it reports the kill (conmon reads the cgroup's memory.events). Pure.
 */
export function podmanOomUnreported(host: PodmanHost): boolean {
  return host.cgroupVersion !== 'v2';
}

/**
 * Why the runner refuses this Podman, or undefined when it can hold a step's limits. Rootless Podman on
 * cgroup v1 cannot set a container's memory or process limits (a v1 hierarchy is not delegated to a user),
 * and rootless on cgroup v2 can only where the memory and pids controllers are delegated to the user; a step
 * there would run uncapped. Root Podman holds them on either.
 */
export function podmanRefusal(host: PodmanHost, endpoint: string): string | undefined {
  if (!host.rootless) return undefined;
  const where =
    'Run it as root (sudo scripts/ensure-podman.sh, then --engine podman as root), or on a host with cgroup v2 whose ' +
    'systemd delegates the memory, pids and cpu controllers to users (Debian 12, Fedora, Ubuntu 22.04 and later do by default: ' +
    'systemd.unified_cgroup_hierarchy=1), or use Docker (--engine local)';
  if (host.cgroupVersion !== 'v2') {
    return `Podman at ${endpoint} is rootless on a cgroup ${host.cgroupVersion} host: it cannot enforce a step's memory or process limits there (a user gets no cgroup of its own on cgroup v1), and the runner will not run steps uncapped. ${where}.`;
  }
  const missing = ['memory', 'pids'].filter((c) => host.cgroupControllers && !host.cgroupControllers.includes(c));
  if (missing.length) {
    return `Podman at ${endpoint} is rootless and this user's cgroup has no ${missing.join(' or ')} controller delegated to it: it cannot enforce a step's ${missing.map((c) => (c === 'pids' ? 'process' : c)).join(' or ')} limit, and the runner will not run steps uncapped. ${where}.`;
  }
  return undefined;
}

/**
 * The RLIMIT_NPROC a container gets when the runner sets none. Docker's containers inherit its daemon's; Podman as
 * root asks for 1048576, above what an engine without CAP_SYS_RESOURCE (one in a container, a sandboxed host) may
 * raise to, and so fails every start ("error setting rlimit type 6"). The host's own limit is given instead: the
 * runner's hard limit, at most the kernel's pid_max (where Podman puts its own).
 */
export function hostProcessLimit(limits: string, pidMax: string): number | undefined {
  const m = /^Max processes\s+\S+\s+(\S+)/m.exec(limits);
  const own = m && /^\d+$/.test(m[1]!) ? Number(m[1]) : Infinity;
  const max = /^\d+$/.test(pidMax.trim()) ? Number(pidMax.trim()) : Infinity;
  const limit = Math.min(own, max);
  return Number.isFinite(limit) && limit > 0 ? limit : undefined;
}

/** hostProcessLimit of this host. */
export function ownProcessLimit(): number | undefined {
  const read = (file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  return hostProcessLimit(read('/proc/self/limits'), read('/proc/sys/kernel/pid_max'));
}

/** A hint for what Podman's error means, when it is one the runner knows: appended to the engine's message. */
export function podmanHint(message: string): string | undefined {
  if (/container-init binary not found/.test(message)) {
    return "Podman has no container init (catatonit), which the runner starts every container with: install it (apt-get install catatonit, or run scripts/ensure-podman.sh), or set init_path in /etc/containers/containers.conf";
  }
  return undefined;
}

/** The start of the name of every isolated network's bridge on Podman: the host's firewall drops what comes in on them (scripts/ensure-podman.sh). */
export const ISOLATED_BRIDGE_PREFIX = 'rnri';

/**
 * The options of a network the host must have no address on (NetworkSpec.isolated). Docker's bridge driver leaves
 * the host's address off (`inhibit_ipv4`); Podman's netavark ignores that and gives the host the network's gateway
 * address, on which a step reaches every service the host listens on at all its addresses. There the bridge is
 * named `rnri…`, and the host's INPUT chain drops what comes in on those (ensure-podman.sh adds the rule; docs/podman.md).
 */
export function isolatedNetworkOptions(podman: boolean, suffix = randomBytes(5).toString('hex')): Record<string, string> {
  return podman ? { 'com.docker.network.bridge.name': `${ISOLATED_BRIDGE_PREFIX}${suffix}` } : { 'com.docker.network.bridge.inhibit_ipv4': 'true' };
}

/**
 * What iptables' check of the rule (`iptables -C INPUT -i rnri+ -j DROP`) means for a run: undefined when it is
 * there (exit 0), else why the runner refuses and how to add it. `code`: its exit status, or why it did not run.
 */
export function isolationRuleProblem(code: number | string, stderr: string): string | undefined {
  if (code === 0) return undefined;
  const why =
    code === 1
      ? 'the host has no such rule'
      : `the runner could not ask iptables whether it has it (${code === 'ENOENT' ? 'no iptables here' : `${code}: ${stderr.trim().split('\n')[0] ?? ''}`.trim()})`;
  return (
    "Podman gives the host an address on a step's own network (netavark ignores Docker's inhibit_ipv4), where a step would reach every service this machine listens on; " +
    `the runner needs the host to drop what comes in on those networks' bridges (${ISOLATED_BRIDGE_PREFIX}*), and ${why}: ` +
    `run scripts/ensure-podman.sh as root, or add the rule yourself: iptables -I INPUT -i ${ISOLATED_BRIDGE_PREFIX}+ -j DROP (see docs/podman.md)`
  );
}

/**
 * A network as Podman's own API makes it (Docker's cannot turn its name server off). Podman gives a network it makes
 * a name server of its own (aardvark-dns, at the network's gateway address, on the host) and puts it first in the
 * resolv.conf of every container on it: a gateway joining its step's network would then ask the host, where the
 * host drops it (isolated), before its own egress name server. Off, as on Docker, where a container's name server
 * is the one it is given. An isolated one's bridge is named for the host's rule (isolatedNetworkOptions).
 */
export function podmanNetworkBody(spec: { name: string; internal: boolean; isolated: boolean; labels: Record<string, string> }, suffix?: string): Record<string, unknown> {
  const bridge = spec.isolated ? isolatedNetworkOptions(true, suffix)['com.docker.network.bridge.name'] : undefined;
  return { name: spec.name, driver: 'bridge', internal: spec.internal, labels: spec.labels, dns_enabled: false, ...(bridge ? { network_interface: bridge } : {}) };
}
