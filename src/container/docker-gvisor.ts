/**
 * The local engine's gVisor runtime: found in `docker info` and tried once
 * with a container that does nothing, so that a step asked to run under
 * gVisor runs under it or is refused before anything starts (never under
 * runc instead). One per DockerRuntime; a success is kept, a failure is not.
 */
import type Docker from 'dockerode';
import { ContainerError, errorMessage } from '../common/errors.js';
import { LABELS } from './runtime.js';
import { findGvisorRuntime, noGvisorMessage, probeFailureMessage, STATX_NOTE, type EngineRuntime } from './gvisor.js';

export class DockerGvisor {
  private ready: Promise<{ name: string; notes: string[] }> | undefined;

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
    const name = findGvisorRuntime(info.Runtimes ?? {}, this.wanted);
    if (!name) throw new ContainerError('no_gvisor', noGvisorMessage(steps, this.endpoint, this.wanted));
    await this.probe(name, probeImage, ['--version']);
    // runsc before 2023 refuses statx with AT_NO_AUTOMOUNT (EINVAL), which Debian 12's ls and stat pass:
    // `ls -l` fails in every step. Said once, before the run, rather than found in an agent's transcript.
    const lsFails = await this.probe(name, probeImage, ['--', '/bin/ls', '-ld', '/']).then(
      () => false,
      (err: unknown) => /exited with 2\b/.test(errorMessage(err)),
    );
    return { name, notes: lsFails ? [STATX_NOTE] : [] };
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
