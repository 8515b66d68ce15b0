/**
 * gVisor as the engine offers it: which of its runtimes is gVisor's runsc, the
 * limits a sandbox needs, and what to tell a user whose engine has none or
 * whose runsc cannot start a container. Pure: docker.ts asks the engine.
 */
import path from 'node:path';

/** A runtime as the engine's `docker info` lists it. */
export interface EngineRuntime {
  path?: string;
  runtimeArgs?: string[];
  /** a containerd shim (io.containerd.runsc.v1), for a runtime registered without a path */
  runtimeType?: string;
}

/** Whether the engine runs this runtime with gVisor's runsc (its program, or its containerd shim). */
export function isGvisor(r: EngineRuntime | undefined): boolean {
  return !!r && (/(^|\/)runsc[^/]*$/.test(r.path ?? '') || /^io\.containerd\.runsc\./.test(r.runtimeType ?? ''));
}

const DOCS = 'docs/gvisor.md';

/**
 * The runtime steps under `isolation: gvisor` run with: the one `wanted` names
 * (RUNNER_GVISOR_RUNTIME), else one called `runsc`, else the first whose
 * program is runsc. Undefined when the engine has none: a name whose program
 * is not runsc (runc under another name) is never taken for gVisor.
 */
export function findGvisorRuntime(runtimes: Readonly<Record<string, EngineRuntime>>, wanted?: string): string | undefined {
  // a name the user gave is taken only if it is gVisor: RUNNER_GVISOR_RUNTIME=runc must not run steps under runc
  if (wanted) return isGvisor(runtimes[wanted]) ? wanted : undefined;
  if (isGvisor(runtimes.runsc)) return 'runsc';
  return Object.keys(runtimes)
    .sort()
    .find((name) => isGvisor(runtimes[name]));
}

/** What to do when the engine has no gVisor runtime (or not the one RUNNER_GVISOR_RUNTIME names). */
export function noGvisorMessage(steps: readonly string[], endpoint: string, wanted?: string, wantedRuntime?: EngineRuntime): string {
  const who = steps.length === 1 ? `step ${steps[0]}` : `steps ${steps.join(', ')}`;
  const missing = !wanted
    ? `the Docker engine at ${endpoint} has no gVisor runtime (none of its runtimes is runsc)`
    : wantedRuntime
      ? `the runtime ${wanted} (RUNNER_GVISOR_RUNTIME) of the Docker engine at ${endpoint} is not gVisor: it runs ` +
        `${wantedRuntime.path ?? wantedRuntime.runtimeType ?? 'an unnamed program'}, not runsc (unset RUNNER_GVISOR_RUNTIME to use the engine's runsc)`
      : `the Docker engine at ${endpoint} has no runtime called ${wanted} (RUNNER_GVISOR_RUNTIME)`;
  return (
    `${who} ${steps.length === 1 ? 'asks' : 'ask'} for isolation: gvisor, but ${missing}. Nothing was started. ` +
    `Add it: install gVisor (Debian: apt-get install runsc), register it in /etc/docker/daemon.json as ` +
    `{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--platform=ptrace"]}}} and reload the engine ` +
    `(kill -HUP $(pidof dockerd); no restart needed); make docker does all of this for an engine it starts. ` +
    `Or run ${steps.length === 1 ? 'it' : 'them'} with isolation: runc. See ${DOCS}.`
  );
}

/** Why the gVisor runtime could not start the probe container, and what to change. */
export function probeFailureMessage(runtime: string, message: string): string {
  const head = `the engine's gVisor runtime ${runtime} could not start a container, so no step was started under it`;
  if (/cannot run with network enabled in root network namespace/.test(message)) {
    // runsc before 2023 tells the root namespace by /proc/sys/net/core/rmem_default, which newer kernels show in every namespace.
    return (
      `${head}: this runsc takes every container's network namespace for the host's (it looks for ` +
      `/proc/sys/net/core/rmem_default, which kernels since 6.x show in every namespace), so its own network stack never starts. ` +
      `Give the runtime "--network=host" in its runtimeArgs in /etc/docker/daemon.json and reload the engine (kill -HUP $(pidof dockerd)): ` +
      `the sandbox then uses the kernel's network stack inside the container's own namespace (what that costs: ${DOCS}); ` +
      `or install a gVisor release from 2023 or later.`
    );
  }
  if (/newosproc|failed to create new OS thread/.test(message)) {
    return `${head}: its threads hit a pids limit (${firstLine(message)}). See ${DOCS}.`;
  }
  return `${head}: ${firstLine(message)}. Try it by hand: docker run --rm --runtime=${runtime} IMAGE true; see ${DOCS}.`;
}

/**
 * Under gVisor the sandbox's own threads count against the container's pids
 * cgroup (9 to 15 host threads for each process in it with the ptrace
 * platform, measured: 61 processes were 537 threads; 64 at their cap, up to
 * 1,000), and runsc dies when the cgroup refuses one. So the cap on the
 * step's processes is RLIMIT_NPROC inside the sandbox, where gVisor's kernel
 * refuses the fork as Linux would (EAGAIN), and the cgroup keeps a backstop
 * large enough for the sandbox that bounds it on the host.
 */
export function gvisorPidLimits(pids: number): { nproc: number; cgroupPids: number } {
  return { nproc: pids, cgroupPids: pids * 16 + 512 };
}

/** What a step should know under a runsc that refuses `ls -l` (found by the probe). */
export const STATX_NOTE =
  'under this engine\'s gVisor, `ls -l`, `ls PATH` and `stat` fail in a step with "Invalid argument" ' +
  '(its runsc refuses statx with AT_NO_AUTOMOUNT, which Debian 12\'s coreutils pass); plain `ls`, find, test, cp, git and Node work. ' +
  `A gVisor release from 2023 or later fixes it (${DOCS}).`;

function firstLine(s: string): string {
  return (s.split('\n').find((l) => l.trim()) ?? s).trim().slice(0, 400);
}

/**
 * The state directory runsc keeps its sandboxes in, from the sandbox
 * process's command line (`--root=DIR`, which the engine's shim chose):
 * undefined when it has none, or one that is not a plain absolute path.
 */
export function sandboxRoot(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const dir = a.startsWith('--root=') ? a.slice('--root='.length) : a === '--root' ? argv[i + 1] : undefined;
    if (dir !== undefined) return path.isAbsolute(dir) && !dir.split('/').includes('..') ? dir : undefined;
    if (a === 'boot') break;
  }
  return undefined;
}

/** The number of tasks in the sandbox, as gVisor's kernel counts them, from `runsc events --stats`; undefined when it does not say. */
export function sandboxTasks(statsJson: string): number | undefined {
  try {
    const n = (JSON.parse(statsJson) as { data?: { pids?: { current?: unknown } } }).data?.pids?.current;
    return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What steps under gVisor ask for that the sandbox does not give, said by
 * `runner validate`: runsc drops CAP_NET_RAW from every container unless the
 * engine runs it with --net-raw (measured: cap_add NET_RAW leaves CapBnd 0).
 */
export function gvisorCaveats(steps: ReadonlyArray<{ id: string; capAdd: readonly string[] }>): string[] {
  const raw = steps.filter((s) => s.capAdd.some((c) => c.replace(/^CAP_/, '') === 'NET_RAW')).map((s) => s.id);
  if (!raw.length) return [];
  return [
    `${raw.length === 1 ? `step ${raw[0]} asks` : `steps ${raw.join(', ')} ask`} for cap_add NET_RAW under isolation: gvisor, which gVisor's runsc ` +
      `drops unless the engine runs it with --net-raw in its runtimeArgs: raw sockets (ping) fail there. See ${DOCS}.`,
  ];
}
