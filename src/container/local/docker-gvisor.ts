/**
 * The local engine's gVisor runtime: found in `docker info` and tried once
 * with a container that does nothing, so that a step asked to run under
 * gVisor runs under it or is refused before anything starts (never under
 * runc instead). One per DockerRuntime.
 *
 * The engine is asked again before every run and every container (a few
 * milliseconds): `runner serve` lives for days, and a runtime removed or
 * pointed elsewhere in daemon.json and reloaded (SIGHUP) must refuse the next
 * run with the fix, not start it on a name the engine no longer has, nor on
 * one that is runc now. Only the probe of one runtime, as the engine
 * describes it, is kept; a failed probe is not.
 */
import { pidAlive } from '../../common/pid-alive.js';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import os from 'node:os';
import { ContainerError, errorMessage } from '../../common/errors.js';
import { LABELS } from '../runtime.js';
import { findGvisorRuntime, noGvisorMessage, probeFailureMessage, sandboxRoot, sandboxTasks, STATX_NOTE, type EngineRuntime } from '../gvisor.js';
import { PROBE_OWNER_LABEL, probeOwner, staleProbes } from './gvisor-probes.js';

const run = promisify(execFile);

export class DockerGvisor {
  /** what each runtime's probe found, by the runtime's name and its entry in the engine (path, arguments) */
  private readonly probed = new Map<string, Promise<string[]>>();
  /** the runsc program the engine runs for it (its `docker info` path), to ask a sandbox how many tasks it holds */
  private program: string | undefined;

  constructor(
    private readonly docker: Docker,
    private readonly endpoint: string,
    private readonly wanted: string | undefined = process.env.RUNNER_GVISOR_RUNTIME || undefined,
  ) {}

  /** The engine's name for the gVisor runtime, once a container has started under it; throws `no_gvisor` with the fix. */
  async runtime(steps: readonly string[], probeImage: string): Promise<string> {
    return (await this.check(steps, probeImage)).name;
  }

  /** As runtime(), with what a step under it should know (what this runsc cannot do). */
  async check(steps: readonly string[], probeImage: string): Promise<{ name: string; notes: string[] }> {
    const info = (await this.docker.info()) as { Runtimes?: Record<string, EngineRuntime> };
    const runtimes = info.Runtimes ?? {};
    const name = findGvisorRuntime(runtimes, this.wanted);
    if (!name) throw new ContainerError('no_gvisor', noGvisorMessage(steps, this.endpoint, this.wanted, this.wanted ? runtimes[this.wanted] : undefined));
    const key = JSON.stringify([name, runtimes[name]?.path ?? '', runtimes[name]?.runtimeArgs ?? []]);
    let notes = this.probed.get(key);
    if (!notes) {
      notes = this.tryRuntime(name, probeImage).catch((err: unknown) => {
        this.probed.delete(key);
        throw err;
      });
      this.probed.set(key, notes);
    }
    const found = { name, notes: await notes };
    this.program = runtimes[name]?.path;
    return found;
  }

  private async tryRuntime(name: string, probeImage: string): Promise<string[]> {
    await this.removeStaleProbes();
    await this.probe(name, probeImage, ['--version']);
    // runsc before 2023 refuses statx with AT_NO_AUTOMOUNT (EINVAL), which Debian 12's ls and stat pass:
    // `ls -l` fails in every step. Said once, before the run, rather than found in an agent's transcript.
    const lsFails = await this.probe(name, probeImage, ['--', '/bin/ls', '-ld', '/']).then(
      () => false,
      (err: unknown) => /exited with 2\b/.test(errorMessage(err)),
    );
    return lsFails ? [STATX_NOTE] : [];
  }

  /**
   * A runner killed during its probe (kill -9, a lost machine) leaves the
   * probe's container behind, exited, with no run to be recovered with: the
   * next probe removes it. Never one that is running, nor one a live runner may still read.
   */
  private async removeStaleProbes(): Promise<void> {
    const list = await this.docker
      .listContainers({ all: true, filters: { label: [`${LABELS.role}=gvisor-probe`] } })
      .catch(() => [] as Docker.ContainerInfo[]);
    const stale = staleProbes(
      list.map((c) => ({ id: c.Id, state: c.State, createdSeconds: c.Created, owner: c.Labels?.[PROBE_OWNER_LABEL] })),
      { host: os.hostname(), nowSeconds: Date.now() / 1000, alive: pidAlive },
    );
    await Promise.all(stale.map((id) => this.docker.getContainer(id).remove({ force: true }).catch(() => undefined)));
  }

  /**
   * How many tasks the sandbox of container `id` holds, as gVisor's kernel
   * counts them (`runsc events --stats`): the count RLIMIT_NPROC is held to,
   * which the host's cgroup does not see (it counts the sandbox's threads).
   * Asks runsc as the engine names it, in the state directory the shim gave
   * the sandbox; undefined where that cannot be done (a remote engine, a
   * runner that may not read runsc's state: not root).
   */
  async tasks(id: string, sandboxPid: number): Promise<number | undefined> {
    if (!this.program) return undefined;
    const argv = (await readFile(`/proc/${sandboxPid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const root = sandboxRoot(argv);
    if (!root) return undefined;
    const out = await run(this.program, [`--root=${root}`, 'events', '--stats', id], { timeout: 5000, maxBuffer: 1 << 20 }).catch(() => undefined);
    return out ? sandboxTasks(out.stdout) : undefined;
  }

  /**
   * docker-init (the engine's own tini, mounted by Init) runs in any image, so
   * the probe needs nothing of the image but its filesystem; network none, as
   * the strictest step has it.
   */
  private async probe(runtime: string, image: string, args: string[]): Promise<void> {
    let c: Docker.Container | undefined;
    try {
      c = await this.docker.createContainer({
        Image: image,
        Entrypoint: ['/sbin/docker-init'],
        Cmd: args,
        NetworkDisabled: true,
        Labels: { [LABELS.role]: 'gvisor-probe', [PROBE_OWNER_LABEL]: probeOwner(os.hostname(), process.pid) },
        HostConfig: { Runtime: runtime, Init: true, NetworkMode: 'none', AutoRemove: false, LogConfig: { Type: 'none', Config: {} } },
      });
      await c.start();
      const end = (await c.wait()) as { StatusCode?: number };
      if (end.StatusCode !== 0) throw new Error(`the probe container exited with ${end.StatusCode}`);
    } catch (err) {
      throw new ContainerError('gvisor_broken', probeFailureMessage(runtime, errorMessage(err)), { cause: err });
    } finally {
      await c?.remove({ force: true }).catch(() => undefined);
    }
  }
}
