/**
 * The swarm engine's transport: a step's workspace by tar, through the
 * runner's transfer server, since a node cannot see the runner's disk. The
 * step's gateway (or, for a step without one, a relay) runs on the manager
 * and leads the step to the server; a git workspace's step gets a copy of its
 * branch's history as its .git. What this engine cannot give a step (its
 * caches, gVisor) it says here.
 */
import { rm } from 'node:fs/promises';
import { ContainerError, errorMessage } from '../../common/errors.js';
import type { HeldGateway } from '../../gateway/host/step-gateway.js';
import type { Isolation } from '../../pipeline/schema.js';
import { CONTAINER_PATHS } from '../../plan/render.js';
import { replaceTree } from '../../workspace/tar-transfer.js';
import type { ContainerRuntime, ContainerSpec, GatewayPlace, Prepared, StepTransport, Where } from '../runtime.js';
import { overlayHiccup, overlayName } from './names.js';
import { stagingFor, TransferServer, type Part } from './transfer-server.js';

/** A relay on the manager: a container on a network of the step's own that passes its connections to one address and nowhere else. */
export interface Relay {
  /** the step's network (an internal overlay) */
  network: string;
  /** the relay's address there: the step's only name server (it answers nothing) */
  dns: string[];
  /** where the step reaches the relay */
  address: { host: string; port: number };
  close(): Promise<void>;
}

/** What the swarm transport is given by the engine that picks it (engine.ts): what it needs of the gateway's side. */
export interface TarTransportNeeds {
  /** the address the swarm's nodes reach this machine at */
  address(): Promise<string>;
  /** the swarm manager's engine, where relays and gateways run (making overlays) */
  manager: ContainerRuntime;
  /**
   * the program a step's container runs first (images/gateway/transfer/runner-transfer.c): its bytes, and the check
   * that the image it comes from is this runner's (before a run)
   */
  helper: { check(): Promise<void>; bytes(): Promise<Buffer> };
  /** starts a relay on the manager, under `name` (one per try), to `to` */
  startRelay(o: { name: string; labels: Record<string, string>; to: { host: string; port: number } }): Promise<Relay>;
  /** a warm gateway (made ahead on the manager, on an overlay of its own) made the step's relay to `to` */
  relayOn(held: HeldGateway, to: { host: string; port: number }): Relay;
}

/** Where a step's container has the transfer helper (a swarm config, mode 0555). */
const HELPER_TARGET = '/run/runner/runner-transfer';

/** How long after its container ended a step's work may still be arriving. */
const ARRIVAL_MS = 10_000;

/**
 * Swarm: the workspace by tar, through the runner's transfer server, at an
 * address the nodes reach. A step with `network: bridge` is on the runner's
 * overlay and reaches the server there; a step with `network: none` gets a
 * network of its own (an internal overlay) whose only other member is a
 * relay on the manager that leads to the server and nowhere else.
 */
export class TarTransport implements StepTransport {
  readonly noHostMounts = "on --engine swarm (a step on another node cannot mount the runner's disk)";
  private readonly server = new TransferServer();
  /** on the manager (the key stays on this side), on the step's own overlay, relaying its workspace too */
  readonly gateways: GatewayPlace;

  constructor(private readonly o: TarTransportNeeds) {
    this.gateways = {
      runtime: o.manager,
      relayTo: async () => {
        await this.server.listen();
        return { host: await o.address(), port: this.server.port };
      },
      nameFor: overlayName,
      retryable: overlayHiccup,
    };
  }

  /** every step starts with the transfer helper the gateway image carries; gVisor is not to be had */
  async checkRun(steps: ReadonlyArray<{ id: string; isolation: Isolation }>): Promise<void> {
    await this.o.helper.check();
    const sandboxed = steps.filter((p) => p.isolation === 'gvisor');
    if (sandboxed.length) throw notOnSwarm(`step ${sandboxed[0]!.id} (isolation: gvisor: a swarm service cannot name a runtime)`);
  }

  async prepare(spec: ContainerSpec, where: Where): Promise<Prepared> {
    // behind a gateway: its network is the step's own, and the gateway relays the workspace too
    if (spec.network !== 'none' && spec.network !== 'bridge' && !where.relay) {
      throw new ContainerError('swarm_unsupported', `network: ${spec.network} cannot be used on --engine swarm: a step there has network none (its own, with a relay to the runner) or bridge (the runner's overlay, with a way out)`);
    }
    // before anything is opened: without the helper no step can run on a node
    const helper = await this.o.helper.bytes();
    await this.server.listen();
    let to = where.relay ?? { host: await this.o.address(), port: this.server.port };
    let relay: Relay | undefined;
    // a warm gateway made the step's relay (it allows nothing): its overlay and container are up already
    const held = spec.network === 'none' && !where.relay ? await where.warm?.takeForRelay() : undefined;
    if (held) {
      relay = this.o.relayOn(held, to);
      where.note?.('relay: a warm gateway, made ahead for no step in particular and given to this one alone (--warm), allowing nothing');
    } else if (spec.network === 'none' && !where.relay) {
      // started, not waited for: the step's wrapper asks it until it listens, while its service is made and placed
      const target = to;
      const open = (attempt: number) => this.o.startRelay({ name: overlayName(`${spec.name}-relay`, attempt), labels: spec.labels, to: target });
      // a busy manager can time out attaching a container to a new overlay ("context deadline exceeded"), or still hold
      // a name being removed: tried again, under another name
      for (let attempt = 1; !relay; attempt++) {
        try {
          relay = await open(attempt);
        } catch (err) {
          if (attempt >= 3 || !overlayHiccup(err)) throw err;
          await new Promise((r) => setTimeout(r, 1000 * attempt));
        }
      }
    }
    // the step reaches the runner through its relay
    if (relay) to = relay.address;
    const staging: Record<Part, string> = { w: stagingFor(where.workspace, 'w'), io: stagingFor(where.io, 'io') };
    // beside the worktree, where git (as the project's owner) may write; removed with the staging directories
    const gitCopy = where.gitCopy ? stagingFor(where.workspace, 'git') : undefined;
    // made while the step's service is created and placed (a second or more on a swarm): its fetch waits for it
    const copied = gitCopy
      ? where.gitCopy!(gitCopy).then(
          () => gitCopy,
          (err: unknown) => {
            where.note?.(`the step's workspace has no .git on its node (git log, git diff and git status fail there): its copy of the branch's history could not be made: ${errorMessage(err)}`);
            return undefined;
          },
        )
      : undefined;
    const t = this.server.open({ w: where.workspace, io: where.io }, staging, where.owner, copied);
    const prepared: ContainerSpec = {
      ...spec,
      network: relay?.network ?? spec.network,
      // nothing holds the step's start: its wrapper fetches its workspace through the relay, which is its gateway
      // when it has one, so its command begins once that listens
      holdUntil: undefined,
      // the relay's name server answers nothing: no name leaves by the node's resolver either
      ...(relay ? { dns: relay.dns } : {}),
      // the project and its git directory stay on this machine: a step on another node sees its worktree only
      mounts: [],
      workingDir: '/',
      // fetch, run, send back: a static program of the runner's, so the image needs no shell, bash or tar
      cmd: [HELPER_TARGET, to.host, String(to.port), '--', ...spec.cmd],
      // where it fetches them to: mounts of their own, whatever the image has (or lacks) at /home/agent
      scratch: [CONTAINER_PATHS.workspace, CONTAINER_PATHS.io],
      files: [
        // the spec's own (the CA bundle) with the transfer's
        ...(spec.files ?? []),
        { target: HELPER_TARGET, data: helper, secret: false },
        { target: 'runner-transfer', data: t.token, secret: true },
      ],
    };
    return {
      spec: prepared,
      finish: async () => {
        try {
          // a timer that holds the process: waiting for a step's work is work
          const arrived = (part: Part, ms: number) => {
            let timer: NodeJS.Timeout | undefined;
            const late = new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error('it never arrived')), ms)));
            return Promise.race([t.received(part), late]).finally(() => clearTimeout(timer));
          };
          const w = await arrived("w", ARRIVAL_MS);
          await replaceTree(where.workspace, staging.w);
          // the outputs follow the work at once, or not at all
          await arrived('io', 5000).then(() => replaceTree(where.io, staging.io)).catch(() => undefined);
          return w.refused.length ? `refused in what came back: ${w.refused.slice(0, 5).join('; ')}${w.refused.length > 5 ? '; …' : ''}` : undefined;
        } catch (err) {
          return `the step's work did not come back from its node (${(err as Error).message}): the worktree holds what it started with`;
        } finally {
          t.close();
          await relay?.close();
          await copied;
          await Promise.all([...Object.values(staging), ...(gitCopy ? [gitCopy] : [])].map((d) => rm(d, { recursive: true, force: true })));
        }
      },
    };
  }
}

export function notOnSwarm(what: string): ContainerError {
  return new ContainerError('swarm_unsupported', `${what} cannot run on --engine swarm yet (docs/scale-out.md): run it on the local engine`);
}
