/**
 * How a step's workspace reaches its container and its work comes back:
 * mounted (the local engine: the container sees the runner's disk), or by
 * tar (swarm: a node cannot see it). Chosen once at start with the engine;
 * run-step prepares a step's container through it and finishes after, and
 * does not know which it got.
 */
import { rm } from 'node:fs/promises';
import { ContainerError, errorMessage } from '../common/errors.js';
import type { ContainerRuntime, ContainerSpec } from '../container/runtime.js';
import { serviceName } from '../container/swarm.js';
import { RELAY_PORT } from '../gateway/config.js';
import { startGateway, type OpenGateway } from '../gateway/host/step-gateway.js';
import type { RelayTarget } from '../gateway/relay.js';
import { replaceTree } from '../workspace/tar-transfer.js';
import { stagingFor, TransferServer, type Part } from './transfer-server.js';

export interface Prepared {
  spec: ContainerSpec;
  /** after the container ended: the step's work is in the workspace again, or why not */
  finish(): Promise<string | undefined>;
}

export interface Where {
  workspace: string;
  io: string;
  owner: { uid: number; gid: number };
  /** the step's gateway, which also relays to the runner's transfer server (swarm) */
  relay?: RelayTarget | undefined;
}

/**
 * Where a step's gateway runs and what else it does: on a swarm, on the manager (the key stays on this side),
 * on the step's own overlay, and it relays the step's workspace to and from the runner as well.
 */
export interface GatewayPlace {
  runtime: ContainerRuntime;
  /** the runner's transfer server, as the gateway on the manager reaches it */
  relayTo(): Promise<RelayTarget>;
  /** the name of a gateway's try (its network adds -net): a new one per try, since a failed try's may still be going away */
  nameFor(base: string, attempt: number): string;
  /** a try that failed this way is tried again (a busy manager attaching to a new overlay) */
  retryable(err: unknown): boolean;
}

/** How a busy swarm manager fails to attach a container to a new overlay, or holds a name still being removed. */
export function overlayHiccup(err: unknown): boolean {
  return /attaching to network failed|context deadline exceeded|name conflicts with an existing object/.test(errorMessage(err));
}

/** An overlay's name, a DNS label (the network adds -net), one per try. */
function overlayName(base: string, attempt: number): string {
  return serviceName(`${base}${attempt > 1 ? attempt : ''}`, 59);
}

export interface StepTransport {
  /** whether steps run on other machines (no mounts) */
  readonly remote: boolean;
  /** where a step's gateway runs, when not beside the step on the step's own engine */
  readonly gateways?: GatewayPlace;
  prepare(spec: ContainerSpec, where: Where): Promise<Prepared>;
}

/** The local engine: the workspace is mounted, nothing travels. */
export const mountTransport: StepTransport = {
  remote: false,
  prepare: async (spec) => ({ spec, finish: async () => undefined }),
};

/** What runs first in a step's container on another node: fetch, run, send back (bash and tar, no curl). */
export const TRANSFER_SCRIPT = `#!/bin/bash
# runner: a step on another node. Fetch its workspace, run it, send its work back.
set -u
addr=$1 port=$2; shift 2
tok=$(cat /run/secrets/runner-transfer) || { echo "runner transfer: no token" >&2; exit 125; }
ws=/home/agent/run-workspace io=/home/agent/.runner
fetch() {
  mkdir -p "$2" || return 1
  # the relay (the step's gateway) starts with the step: asked again until it listens, 30 s at most
  local tries=0
  until exec 3<>"/dev/tcp/$addr/$port"; do
    tries=$((tries + 1)); [ "$tries" -lt 150 ] || return 1; sleep 0.2
  done 2>/dev/null
  printf 'GET %s %s\\n' "$tok" "$1" >&3
  tar -x -C "$2" -f - <&3; local rc=$?
  exec 3>&-
  return $rc
}
send() { { printf 'PUT %s %s\\n' "$tok" "$1"; tar -c -C "$2" -f - . 2>/dev/null; } > "/dev/tcp/$addr/$port" && confirm "$1"; }
# the container must outlive its last bytes in flight: wait until the runner has them all
confirm() {
  local ans=
  exec 4<>"/dev/tcp/$addr/$port" || return 1
  printf 'ASK %s %s\\n' "$tok" "$1" >&4
  read -r -t 600 ans <&4
  exec 4>&-
  [ "$ans" = ok ] || { echo "runner transfer: the runner did not take the work back (\${ans:-no answer})" >&2; return 1; }
}
fetch w "$ws" || { echo "runner transfer: could not fetch the workspace from $addr:$port" >&2; exit 125; }
fetch io "$io" || { echo "runner transfer: could not fetch the step's io directory" >&2; exit 125; }
cd "$ws"
"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"; rc=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
send w "$ws" || echo "runner transfer: could not send the work back" >&2
send io "$io" || true
# the runner has the step's last bytes when both streams end with this (END_MARKER)
printf '\\036runner-transfer: end\\036\\n'; printf '\\036runner-transfer: end\\036\\n' >&2
exit $rc
`;

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
  readonly remote = true;
  private readonly server = new TransferServer();
  readonly gateways: GatewayPlace;

  /** `manager`: where a step's relay and gateway run (the swarm manager's engine, making overlays) */
  constructor(
    private readonly address: () => Promise<string>,
    private readonly manager: ContainerRuntime,
  ) {
    this.gateways = {
      runtime: manager,
      relayTo: async () => {
        await this.server.listen();
        return { host: await this.address(), port: this.server.port };
      },
      nameFor: overlayName,
      retryable: overlayHiccup,
    };
  }

  async prepare(spec: ContainerSpec, where: Where): Promise<Prepared> {
    // behind a gateway: its network is the step's own, and the gateway relays the workspace too
    if (spec.network !== 'none' && spec.network !== 'bridge' && !where.relay) {
      throw new ContainerError('swarm_unsupported', `network: ${spec.network} cannot be used on --engine swarm: a step there has network none (its own, with a relay to the runner) or bridge (the runner's overlay, with a way out)`);
    }
    await this.server.listen();
    let to = where.relay ?? { host: await this.address(), port: this.server.port };
    let relay: OpenGateway | undefined;
    if (spec.network === 'none' && !where.relay) {
      // started, not waited for: the step's wrapper asks it until it listens, while its service is made and placed
      const open = (attempt: number) =>
        startGateway(this.manager, {
          name: overlayName(`${spec.name}-relay`, attempt),
          labels: spec.labels,
          egressNetwork: 'bridge',
          config: { allow: [], prices: {}, relay: { port: RELAY_PORT, to } },
          onEvent: () => undefined,
        });
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
      to = { host: relay.dns[0]!, port: RELAY_PORT };
    }
    const staging: Record<Part, string> = { w: stagingFor(where.workspace, 'w'), io: stagingFor(where.io, 'io') };
    const t = this.server.open({ w: where.workspace, io: where.io }, staging, where.owner);
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
      cmd: ['bash', '/run/runner/transfer.sh', to.host, String(to.port), ...spec.cmd],
      files: [
        // the spec's own (the CA bundle) with the transfer's
        ...(spec.files ?? []),
        { target: '/run/runner/transfer.sh', data: TRANSFER_SCRIPT, secret: false },
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
          await Promise.all(Object.values(staging).map((d) => rm(d, { recursive: true, force: true })));
        }
      },
    };
  }
}

export function notOnSwarm(what: string): ContainerError {
  return new ContainerError('swarm_unsupported', `${what} cannot run on --engine swarm yet (docs/scale-out.md): run it on the local engine`);
}
