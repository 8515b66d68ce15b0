/**
 * A step's gateway, for the time of the step: a network of the step's own
 * (internal, and without an address for the host), the gateway's container on
 * it as `runner-gateway` and on the egress network as its only way out, and
 * what it reported (calls, refusals) once it is closed.
 */
import { ContainerError, errorMessage } from '../../common/errors.js';
import { LineSplitter } from '../../common/line-splitter.js';
import { LABELS, type ContainerHandle, type ContainerRuntime } from '../../container/runtime.js';
import { GATEWAY_HOST, type CallEvent, type CallStartEvent, type GatewayConfig, type GatewayEvent } from '../config.js';
import { thisMachineAddresses, thisMachineNetworks } from './host-addresses.js';
import { GATEWAY_IMAGE } from './image.js';
import type { WarmStep } from '../../run/warm/warm-steps.js';

/** A step's model calls, summed as they come (a step making a million calls costs the runner no memory). */
export interface CallTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
  /** some call's model is not in the price table */
  unpriced: boolean;
  /** some call's model is in it */
  priced?: boolean;
  /** the last model a call named */
  model: string | null;
}

export interface GatewayReport {
  totals: CallTotals;
  /** model calls refused for the budget */
  budgetRefused: number;
  /** requests refused for not being model calls (a path the gateway does not pass) */
  pathsRefused: number;
  /** host → refused connections */
  refused: Map<string, number>;
  /** refusals of hosts past the gateway's bound on distinct hosts */
  refusedOthers: number;
  /** requests to inspected hosts refused by their rules: the rule (in the file's words) → how many */
  rulesRefused: Map<string, number>;
  /** requests that carried a secret's value: the secret's name → how many (never a value) */
  secretsRefused: Map<string, number>;
  /** the gateway ended before the step did (out of memory, a crash): what it metered is not all */
  died?: string;
  /** it never listened (died says why): the step had no way out at all */
  neverListened?: boolean;
}

export function addCall(t: CallTotals, e: CallEvent): void {
  if (e.refused) return;
  t.calls++;
  t.inputTokens += e.inputTokens;
  t.outputTokens += e.outputTokens;
  t.cacheReadTokens += e.cacheReadTokens;
  t.cacheWriteTokens += e.cacheWriteTokens;
  t.costUsd += e.costUsd ?? 0;
  if (e.costUsd === null && e.inputTokens + e.outputTokens > 0) t.unpriced = true;
  if (e.costUsd !== null && e.inputTokens + e.outputTokens > 0) t.priced = true;
  if (e.model) t.model = e.model;
}

/** Distinct keys a refusal count keeps (rules and secrets come from the file, so there are few): the rest are not kept apart. */
export const MAX_REFUSAL_KEYS = 64;

function countIn(m: Map<string, number>, key: string): void {
  const k = key.slice(0, 300);
  if (m.has(k) || m.size < MAX_REFUSAL_KEYS) m.set(k, (m.get(k) ?? 0) + 1);
}

export interface OpenGateway {
  /** the step's network: its only one */
  network: string;
  /** the step's name server: the gateway's, which answers no name */
  dns: string[];
  /**
   * Resolves once the gateway listens on its address; rejects (gateway_failed) when it ends first or does not
   * listen within READY_MS. Not rejected by close().
   */
  listening: Promise<void>;
  /** the certificate of the gateway's own CA, once it listens, when it inspects TLS (its ready event says it); its key stays in the gateway */
  caPem(): string | undefined;
  /** its address on the egress network, once it started (what a relay on the host admits) */
  egressAddress(): Promise<string | undefined>;
  close(): Promise<GatewayReport>;
}

/** What a gateway is made with before it knows its step: where it is, and where it reaches out. */
export interface GatewayBase {
  /** unique per step run (or warm gateway): the network and the container are named after it */
  name: string;
  labels: Record<string, string>;
  /** the network the gateway reaches out on */
  egressNetwork: string;
  /** name servers it resolves allowed names with (default: the engine's) */
  egressDns?: string[];
}

/** What a step gives its gateway: its config (rules, key, allowance) and where what it says goes. */
export interface GatewayGift {
  config: Omit<GatewayConfig, 'listenSubnet' | 'hostAddresses' | 'hostNetworks'>;
  /** as it happens: a call, a refusal, a problem of the gateway's own */
  onEvent(e: GatewayEvent): void;
}

export interface GatewayOptions extends GatewayBase, GatewayGift {}

/**
 * A gateway made and started ahead of any step (a warm pool's: gateway-pool.ts), its program waiting for its config
 * on standard input. `give` hands it to one step (its config written then, its listening timed from then); a held
 * gateway that is never given is discarded.
 */
export interface HeldGateway {
  /** its container ended while held: it cannot be given */
  ended(): boolean;
  give(gift: GatewayGift): OpenGateway;
  /** removes it (and its warm step container, first: its network goes with it) */
  discard(): Promise<void>;
  /** the network its step gets, and the name server there */
  readonly way: { network: string; dns: string[] };
  /** a step's container made ahead on its network (src/run/warm/), when the pool keeps them */
  step?: WarmStep | undefined;
}

const READY_MS = 20_000;
/** asked every 10 ms while the gateway's container starts (its start takes a few hundred on a busy engine) */
const ADDRESS_TRIES = 500;

/** A gateway that listens before this returns: for a relay (swarm), whose address the step is handed as its way. */
export async function openGateway(runtime: ContainerRuntime, o: GatewayOptions): Promise<OpenGateway> {
  const gw = await startGateway(runtime, o);
  try {
    await gw.listening;
  } catch (err) {
    await gw.close();
    throw err;
  }
  return gw;
}

/**
 * A gateway whose container is starting (its address on the step's network known) but which may not listen yet:
 * the step's container is made and started meanwhile, its command held until `listening` (ContainerSpec.holdUntil),
 * a few hundred milliseconds sooner than after it. Should the gateway never listen, `listening` says so and the
 * step is stopped (step-network.ts).
 */
export async function startGateway(runtime: ContainerRuntime, o: GatewayOptions): Promise<OpenGateway> {
  return (await makeGateway(runtime, o, { config: o.config, onEvent: o.onEvent })).gateway;
}

/** A gateway made, started and held for a step to come: its config is written when it is given (HeldGateway). */
export async function holdGateway(runtime: ContainerRuntime, base: GatewayBase): Promise<HeldGateway> {
  let giveTo: ((gift: GatewayGift) => void) | undefined;
  let refuse: (() => void) | undefined;
  const later = new Promise<GatewayGift>((resolve, reject) => {
    giveTo = resolve;
    refuse = () => reject(new Error('discarded'));
  });
  later.catch(() => undefined);
  const made = await makeGateway(runtime, base, later);
  let given = false;
  const held: HeldGateway = {
    ended: made.ended,
    way: { network: made.gateway.network, dns: made.gateway.dns },
    give: (gift) => {
      if (given) throw new Error('a warm gateway is given once');
      given = true;
      giveTo!(gift);
      return made.gateway;
    },
    discard: async () => {
      refuse!();
      await held.step?.discard().catch(() => undefined);
      await made.gateway.close();
    },
  };
  return held;
}

/**
 * The gateway's network and container, made and started. `gift`: its config now (a step's own gateway), or a promise
 * of it (a held one): the config, with this machine's addresses as they are then, is written to its standard input
 * once given, and its listening is timed from then.
 */
async function makeGateway(runtime: ContainerRuntime, o: GatewayBase, gift: GatewayGift | Promise<GatewayGift>): Promise<{ gateway: OpenGateway; ended: () => boolean }> {
  const now = !(gift instanceof Promise) ? gift : undefined;
  const later = Promise.resolve(gift);
  // what the gateway says before it is given goes nowhere (it says nothing before its config)
  let onEvent: (e: GatewayEvent) => void = () => undefined;
  if (now) onEvent = now.onEvent;
  else void later.then((g) => (onEvent = g.onEvent), () => undefined);
  const network = `${o.name}-net`;
  const labels = { ...o.labels, [LABELS.role]: 'gateway' };
  // this machine's addresses, read while the step's network is made: the host has no address on it (isolated),
  // and the network's unused gateway address, if read with the others, is one more the gateway refuses. A held
  // gateway reads them when it is given (heldConfig), not now.
  const [machine, made] = await Promise.allSettled([
    now ? Promise.all([thisMachineAddresses(runtime), thisMachineNetworks()]) : Promise.resolve<[string[], string[]]>([[], []]),
    runtime.createNetwork({ name: network, internal: true, isolated: true, labels }),
  ]);
  if (made.status === 'rejected') throw made.reason;
  if (machine.status === 'rejected') {
    await runtime.removeNetwork(network).catch(() => undefined);
    throw machine.reason;
  }
  const [hostAddresses, hostNetworks] = machine.value;
  const { subnet } = made.value;
  let handle: ContainerHandle | undefined;
  const report: GatewayReport = {
    totals: { calls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, unpriced: false, model: null },
    budgetRefused: 0,
    pathsRefused: 0,
    refused: new Map(),
    refusedOthers: 0,
    rulesRefused: new Map(),
    secretsRefused: new Map(),
  };
  let summary = false;
  /** calls sent and not yet settled: if the gateway dies with them open, they are charged their worst case here */
  const open = new Map<number, CallStartEvent>();
  let stopping = false;
  let stderr = '';
  let readyAddress: ((a: string) => void) | undefined;
  let caPem: string | undefined;
  const ready = new Promise<string>((resolve) => (readyAddress = resolve));
  const lines = new LineSplitter((line) => {
    let e: GatewayEvent;
    try {
      e = JSON.parse(line) as GatewayEvent;
    } catch {
      return;
    }
    if (e.event === 'ready') {
      // the first ready only: a certificate is PEM text, and the step's trust is built from it
      if (caPem === undefined && typeof e.caPem === 'string' && e.caPem.length <= 65_536 && e.caPem.includes('-----BEGIN CERTIFICATE-----') && !/PRIVATE KEY/.test(e.caPem)) caPem = e.caPem;
      readyAddress!(e.address);
    }
    else if (e.event === 'call_start') open.set(e.id, e);
    else if (e.event === 'call') {
      if (e.id !== undefined) open.delete(e.id);
      addCall(report.totals, e);
      if (e.refused === 'budget') report.budgetRefused = Math.max(1, report.budgetRefused);
    }
    else if (e.event === 'refused') report.refused.set(e.host, Math.max(1, report.refused.get(e.host) ?? 0));
    else if (e.event === 'egress_refused') countIn(report.rulesRefused, String(e.rule));
    else if (e.event === 'secret_refused') countIn(report.secretsRefused, String(e.secret));
    else if (e.event === 'refusals') {
      summary = true;
      for (const [h, n] of Object.entries(e.hosts)) report.refused.set(h, n);
      report.refusedOthers = e.others;
      report.budgetRefused = Math.max(report.budgetRefused, e.budget ?? 0);
      report.pathsRefused = e.paths ?? 0;
    }
    onEvent(e);
  });
  // what the gateway's node says on stderr (a crash) is a problem of the step's gateway, in its log
  const errLines = new LineSplitter((line) => onEvent({ event: 'error', message: line.slice(0, 500) }));
  let readyTimer: NodeJS.Timeout | undefined;
  /** why the gateway never listened, once that is known */
  let failed: string | undefined;
  const close = async (): Promise<GatewayReport> => {
    stopping = true;
    clearTimeout(readyTimer);
    if (handle) {
      const state = ended ? await handle.inspect().catch(() => undefined) : undefined;
      if (failed) {
        report.died = `${failed}: the step had no way out`;
        report.neverListened = true;
      }
      else if (ended) report.died = `the step's gateway stopped before its step ended${state?.oomKilled ? ' (out of memory)' : state ? ` (exit ${state.exitCode})` : ''}: the step lost its way out, and its metering may miss calls`;
      await handle.stop(2).catch(() => undefined);
      await streams?.catch(() => undefined);
      lines.end();
      errLines.end();
      await handle.remove().catch(() => undefined);
    }
    // the gateway died (or was killed) with calls open: the model may have worked on them, so they cost their worst case
    for (const start of open.values()) {
      const { costUsd, ...tokens } = start.worst;
      const e: CallEvent = { event: 'call', id: start.id, model: start.model, ...tokens, costUsd, chargedUsd: costUsd, durationMs: 0, status: 0, worstCase: true };
      addCall(report.totals, e);
      onEvent(e);
    }
    open.clear();
    await runtime.removeNetwork(network).catch((err) => onEvent({ event: 'error', message: `removing network ${network}: ${errorMessage(err)}` }));
    if (!summary) report.refusedOthers = 0;
    return report;
  };
  let streams: Promise<void> | undefined;
  let ended = false;
  // held: this machine's addresses as they are when it is given (networks made since are among them); never given, none
  const heldConfig = () => {
    const text = later.then(async (g) => configLine(g, ...(await Promise.all([thisMachineAddresses(runtime), thisMachineNetworks()])), subnet));
    text.catch(() => undefined);
    return text;
  };
  try {
    handle = await runtime.create({
      name: o.name,
      image: GATEWAY_IMAGE,
      cmd: [],
      // held: it waits for its step (its config) as long as the pool keeps it, not the 15 s a step's own gateway waits
      env: now ? {} : { RUNNER_GATEWAY_HELD: '1' },
      // its key on standard input, never in its environment: `docker inspect` shows that to anyone with the engine's API
      stdin: now ? configLine(now, hostAddresses, hostNetworks, subnet) : heldConfig(),
      workingDir: '/',
      user: '65532:65532',
      mounts: [],
      // request bodies held at once are bounded (64 MiB), a JSON parse of the largest adds a few times its size
      memoryBytes: 512 * 1024 ** 2,
      cpus: 0.5,
      pids: 64,
      openFiles: 4096,
      fileSizeBytes: 1024 ** 2,
      readOnlyRoot: true,
      capAdd: [],
      network: o.egressNetwork,
      ...(o.egressDns ? { dns: o.egressDns } : {}),
      // its name server listens on port 53 without root; it forwards no packet between its networks
      sysctls: { 'net.ipv4.ip_unprivileged_port_start': '0', 'net.ipv4.ip_forward': '0' },
      labels,
    });
    const attached = await handle.attach(
      (b) => lines.push(b),
      (b) => {
        stderr = (stderr + b.toString('utf8')).slice(-2000);
        errLines.push(b);
      },
    );
    streams = attached.ended;
    void attached.ended.then(() => {
      if (!stopping) ended = true;
    });
    // joined before start: its route out stays the egress network's
    await handle.connect(network, [GATEWAY_HOST]);
    // Started, not waited for: its address is the engine's early in the start (its endpoint on the step's network),
    // and the step's container starts while the rest of this one's start goes on.
    const started = handle;
    let startProblem: string | undefined;
    let startSettled = false;
    const starting = started
      .start()
      .catch((err: unknown) => void (startProblem = errorMessage(err)))
      .finally(() => (startSettled = true));
    /** the address the step is given as its name server */
    let given: string | undefined;
    const listening = (async (): Promise<string> => {
      const address = await Promise.race([
        ready,
        attached.ended.then(() => undefined),
        starting.then(() => (startProblem !== undefined ? undefined : new Promise<never>(() => undefined))),
        // timed from its config: a held gateway waits for its step without a limit
        new Promise<undefined>((r) => void later.then(() => (readyTimer = setTimeout(() => r(undefined), READY_MS)), () => undefined)),
      ]).finally(() => clearTimeout(readyTimer));
      // closed before it listened: nothing failed
      if (stopping) return '';
      if (!address) {
        const why = startProblem ?? stderr.trim().split('\n').at(-1) ?? '';
        failed = `the step's gateway did not start${why ? `: ${why}` : ''} (check ${GATEWAY_IMAGE} with \`make images\`, and that network ${o.egressNetwork} exists)`;
        throw new ContainerError('gateway_failed', failed);
      }
      if (given !== undefined && address !== given) {
        failed = `the step's gateway listens on ${address}, not on ${given}, the address its step was given`;
        throw new ContainerError('gateway_failed', failed);
      }
      return address;
    })();
    listening.catch(() => undefined);
    for (let i = 0; given === undefined && !startSettled && i < ADDRESS_TRIES; i++) {
      given = await started.addressOn(network).catch(() => undefined);
      if (given === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    if (given === undefined) {
      await starting;
      if (startProblem !== undefined) throw new ContainerError('gateway_failed', `the step's gateway did not start: ${startProblem}`);
      given = await started.addressOn(network).catch(() => undefined);
    }
    // an engine that does not say the address: the one the gateway says, once it listens
    const address = given ?? (await listening);
    // handled here too: a held gateway that ends before any step takes it rejects with no step to hear it
    const listened = listening.then(() => undefined);
    listened.catch(() => undefined);
    return {
      gateway: { network, dns: [address], listening: listened, caPem: () => caPem, egressAddress: () => started.addressOn(o.egressNetwork), close },
      ended: () => ended,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

function configLine(g: GatewayGift, hostAddresses: string[], hostNetworks: string[], listenSubnet: string): string {
  return `${JSON.stringify({ ...g.config, hostAddresses, hostNetworks, listenSubnet } satisfies GatewayConfig)}\n`;
}
