/**
 * The local engine's gVisor runtime: found in `docker info` and tried once
 * with a container that does nothing, so that a step asked to run under
 * gVisor runs under it or is refused before anything starts (never under
 * runc instead). One per DockerRuntime; a success is kept, a failure is not.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { ContainerError, errorMessage } from '../common/errors.js';
import { LABELS } from './runtime.js';
import { findGvisorRuntime, noGvisorMessage, probeFailureMessage, sandboxRoot, sandboxTasks, STATX_NOTE, type EngineRuntime } from './gvisor.js';

const run = promisify(execFile);

export class DockerGvisor {
  private ready: Promise<{ name: string; notes: string[] }> | undefined;
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

  /** As runtime(), with what a step under it should know (what this runsc cannot do), once per runner. */
  check(steps: readonly string[], probeImage: string): Promise<{ name: string; notes: string[] }> {
    this.ready ??= this.find(steps, probeImage).catch((err: unknown) => {
      this.ready = undefined;
      throw err;
    });
    return this.ready;
  }

  private async find(steps: readonly string[], probeImage: string): Promise<{ name: string; notes: string[] }> {
    const info = (await this.docker.info()) as { Runtimes?: Record<string, EngineRuntime> };
    const runtimes = info.Runtimes ?? {};
    const name = findGvisorRuntime(runtimes, this.wanted);
    if (!name) throw new ContainerError('no_gvisor', noGvisorMessage(steps, this.endpoint, this.wanted, this.wanted ? runtimes[this.wanted] : undefined));
    await this.probe(name, probeImage, ['--version']);
    this.program = runtimes[name]!.path;
    // runsc before 2023 refuses statx with AT_NO_AUTOMOUNT (EINVAL), which Debian 12's ls and stat pass:
    // `ls -l` fails in every step. Said once, before the run, rather than found in an agent's transcript.
    const lsFails = await this.probe(name, probeImage, ['--', '/bin/ls', '-ld', '/']).then(
      () => false,
      (err: unknown) => /exited with 2\b/.test(errorMessage(err)),
    );
    return { name, notes: lsFails ? [STATX_NOTE] : [] };
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
        Labels: { [LABELS.role]: 'gvisor-probe' },
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
