/**
 * Warm gateways: a few step gateways made ahead (their network made, their container started, their program loaded
 * and waiting for its config), so that a step behind a gateway does not wait for one to start. A step takes one
 * whole and alone: its config (key, rules, allowance) is written to it then, it serves that step only and is
 * removed with it, as a cold one is; the pool makes another behind it. A warm gateway has never held a key, a rule
 * or a byte of traffic before its step: there is nothing of another run in it.
 *
 * Bounded (`size`), and given back when idle: after `idleMs` without a step taking one the pool removes its
 * gateways, and makes them again at the next take (that step starts cold). Those of a runner that died (kill -9)
 * are removed by the next pool of the same home. `runner serve --warm N` and `runner exec --warm N` keep one.
 */
import { pidAlive } from '../../common/pid-alive.js';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '../../common/errors.js';
import { overlayBusy } from '../../container/local/docker.js';
import { LABELS, type ContainerRuntime, type ContainerSpec } from '../../container/runtime.js';
import type { WarmStep, WarmSteps } from '../../run/warm/warm-steps.js';
import { GATEWAY_HOST } from '../config.js';
import { holdGateway, type HeldGateway } from './step-gateway.js';
import { readWarmStatuses, removeWarmStatus, writeWarmStatus } from './warm-status.js';

/** on a warm gateway and its network: who keeps it (host:pid), so that the next pool can tell a dead runner's */
export const WARM_OWNER_LABEL = 'dev.runner.warm-owner';

/** after a take that leaves some ready, the pool makes the next this much later: not on the cores the step's start uses */
export const REFILL_DELAY_MS = 1500;

/** without a step taking one for this long, a pool gives its gateways back */
export const DEFAULT_IDLE_MS = 10 * 60_000;

export interface PoolOptions {
  /** how many are kept warm */
  size: number;
  home: string;
  egressNetwork: string;
  egressDns?: string[] | undefined;
  /** without a take for this long, the pool gives its gateways back */
  idleMs?: number;
  /** after a take that leaves some ready, the next is made this much later (REFILL_DELAY_MS; 0: at once) */
  refillDelayMs?: number;
  /** a warm gateway that could not be made, or removed */
  onProblem?(message: string): void;
  /** where the pool says how many are warm, for `runner runs` and other runners (warm-status.ts): the home's warm/ */
  statusDir?: string;
  /** the command keeping it, said there: `serve` or `exec` */
  command?: string;
  /** a warm step container beside each gateway (src/run/warm/), where steps run on the gateways' engine */
  steps?: WarmSteps;
}

/** What a step's way asks of the pool: a gateway for its egress, if one is warm. */
export interface WarmGateways {
  /** a warm gateway, or one being made now (sooner than a cold one started after this); undefined: start cold */
  /** `key`: the step's image, project, user and limits (warmKey); a gateway whose warm step container is of them is given first, then one without any */
  take(egressNetwork: string, egressDns: string[] | undefined, key?: string): Promise<HeldGateway | undefined>;
  /** a warm gateway to serve as a step's relay (a swarm step with network: none), whatever its egress: it is given no way out */
  takeForRelay(): Promise<HeldGateway | undefined>;
  /**
   * The spec of a step behind a gateway: a shape of the warm step containers made from then on (a pool that keeps
   * them; warm-steps.ts keeps the latest few).
   */
  learn?(spec: ContainerSpec): void;
}

export class GatewayPool implements WarmGateways {
  private readonly ready: HeldGateway[] = [];
  /** the shapes of the step containers being made now */
  private readonly makingShapes: string[] = [];
  /** steps waiting for a gateway being made */
  private readonly waiters: Array<(held: HeldGateway | undefined) => void> = [];
  private making = 0;
  private seq = 0;
  private closed = false;
  private idle = false;
  private lastTake = Date.now();
  private readonly timer: NodeJS.Timeout;
  private failures = 0;
  private started: Promise<void> | undefined;
  private readonly stopping = new AbortController();
  /** gateways being made: the close waits for them, so none is left behind */
  private readonly inFlight = new Set<Promise<void>>();
  readonly owner = `${os.hostname()}:${process.pid}`;
  /** the status file's writes, one after another; `said`: the count last written */
  private writing: Promise<void> = Promise.resolve();
  private said: string | undefined;

  constructor(
    private readonly runtime: ContainerRuntime,
    private readonly o: PoolOptions,
  ) {
    this.timer = setInterval(() => void this.look(), Math.min(60_000, Math.max(1000, (o.idleMs ?? DEFAULT_IDLE_MS) / 4)));
    this.timer.unref();
  }

  /** How many are warm now (made and waiting; one that died waiting is not counted). */
  get warm(): number {
    return this.ready.filter((h) => !h.ended()).length;
  }

  /** How many of those have the step's container made beside them (run/warm/), waiting too. */
  get warmContainers(): number {
    return this.ready.filter((h) => !h.ended() && h.step && !h.step.held.ended()).length;
  }

  /** Writes the status file when what it says changed (after the close: removes it). */
  private report(): void {
    const dir = this.o.statusDir;
    if (!dir) return;
    const now = this.closed ? 'closed' : `${this.warm}/${this.warmContainers}/${this.idle}`;
    if (now === this.said) return;
    this.said = now;
    const closed = this.closed;
    const status = { host: os.hostname(), pid: process.pid, command: this.o.command ?? 'exec', warm: this.warm, ...(this.o.steps ? { containers: this.warmContainers } : {}), size: this.o.size, idle: this.idle };
    this.writing = this.writing
      .then(() => (closed ? removeWarmStatus(dir, status.host, status.pid) : writeWarmStatus(dir, status)))
      .catch((err) => this.o.onProblem?.(`could not write how many gateways are warm to ${dir}: ${errorMessage(err)}`));
  }

  /** Removes what a dead runner's pool of this home left, then makes the pool's gateways. */
  start(): Promise<void> {
    this.started ??= (async () => {
      await this.removeStale().catch((err) => this.o.onProblem?.(`removing warm gateways a stopped runner left: ${errorMessage(err)}`));
      this.fill();
    })();
    return this.started;
  }

  take(egressNetwork: string, egressDns: string[] | undefined, key?: string): Promise<HeldGateway | undefined> {
    if (egressNetwork !== this.o.egressNetwork || !sameList(egressDns, this.o.egressDns)) return Promise.resolve(undefined);
    return this.takeForRelay(key);
  }

  async takeForRelay(key?: string): Promise<HeldGateway | undefined> {
    if (this.closed) return undefined;
    this.lastTake = Date.now();
    if (this.idle) this.idle = false;
    for (const dead of this.ready.filter((h) => h.ended())) {
      this.ready.splice(this.ready.indexOf(dead), 1);
      void dead.discard();
    }
    // a step takes the one whose container was made for it (its image, project, user and limits); one that none fits
    // takes one without a container, if any, so that those made for others are kept
    const fits = (h: HeldGateway) => h.step?.key === key;
    const at = Math.max(0, key === undefined ? 0 : [this.ready.findIndex(fits), this.ready.findIndex((h) => !h.step)].find((i) => i >= 0) ?? 0);
    const held: HeldGateway | undefined = this.ready.splice(at, 1)[0];
    // the one behind it is made once the step's own start is past (its CLI loads on the same cores), unless none is
    // left for the next step
    if (held && this.ready.length && (this.o.refillDelayMs ?? REFILL_DELAY_MS) > 0) this.fillLater();
    else this.fill();
    this.report();
    if (held) return held;
    // none ready, one being made that no step waits for yet: it started no later than a cold one would
    return this.making > this.waiters.length ? new Promise<HeldGateway | undefined>((r) => this.waiters.push(r)) : undefined;
  }

  learn(spec: ContainerSpec): void {
    const steps = this.o.steps;
    // a shape already kept changes nothing: an agent then a verify of another image, run after run, remake nothing
    if (!steps || this.closed || !steps.learn(spec)) return;
    // a new shape: the gateways waiting without a container, or with one of a shape no longer kept, get one (of the
    // shape fewest have); one of another kept shape stays for its steps
    const kept = steps.shapes;
    for (const held of this.ready) if (!held.step || !kept.includes(held.step.learned)) void this.giveStep(held);
  }

  /** A warm step container of the shape last learned beside `held` (one of an older shape goes). */
  private async giveStep(held: HeldGateway): Promise<void> {
    const steps = this.o.steps;
    if (!steps?.knows) return;
    const old = held.step;
    held.step = undefined;
    const making = (async () => {
      await old?.discard().catch(() => undefined);
      const step = await this.makeStep(held);
      // taken (or discarded) meanwhile: the container is not for it any more
      if (step && (held.step !== undefined || !this.ready.includes(held) || this.closed)) await step.discard().catch(() => undefined);
      else if (step) held.step = step;
      this.report();
    })();
    this.inFlight.add(making);
    await making.finally(() => this.inFlight.delete(making));
  }

  /** A warm step container beside `held`, of the kept shape the fewest waiting gateways have (the latest first). */
  private async makeStep(held: HeldGateway): Promise<WarmStep | undefined> {
    const steps = this.o.steps;
    if (!steps) return undefined;
    // those waiting and those being made: two made at once must not both take the shape none had
    const count = (shape: string) => this.ready.filter((h) => h !== held && h.step?.learned === shape).length + this.makingShapes.filter((s) => s === shape).length;
    const shape = steps.shapes.reduce<string | undefined>((best, s) => (best === undefined || count(s) < count(best) ? s : best), undefined);
    if (shape === undefined) return undefined;
    this.makingShapes.push(shape);
    try {
      return await steps.make({ network: held.way.network, dns: held.way.dns, hosts: { [GATEWAY_HOST]: held.way.dns[0]! } }, `${held.way.network.replace(/-net$/, '')}-step`, shape);
    } finally {
      this.makingShapes.splice(this.makingShapes.indexOf(shape), 1);
    }
  }

  /** Removes every warm gateway; the pool makes no more. */
  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    clearInterval(this.timer);
    clearTimeout(this.refillTimer);
    for (const w of this.waiters.splice(0)) w(undefined);
    // what is being removed or made now ends first (a gateway made after the close discards itself)
    await this.started?.catch(() => undefined);
    await Promise.all([...this.inFlight]);
    const all = this.ready.splice(0);
    await Promise.all(all.map((h) => h.discard().catch(() => undefined)));
    this.report();
    await this.writing;
  }

  private refillTimer: NodeJS.Timeout | undefined;
  private fillLater(): void {
    if (this.refillTimer) return;
    this.refillTimer = setTimeout(() => {
      this.refillTimer = undefined;
      this.fill();
    }, this.o.refillDelayMs ?? REFILL_DELAY_MS);
    this.refillTimer.unref();
  }

  private fill(): void {
    while (!this.closed && !this.idle && this.ready.length + this.making < this.o.size) {
      this.making++;
      const made: Promise<void> = this.makeOne().finally(() => {
        this.making--;
        this.inFlight.delete(made);
        this.fill();
      });
      this.inFlight.add(made);
    }
  }

  private async makeOne(): Promise<void> {
    // a failing engine is not asked again at once: 1 s, 2 s, 4 s ... up to a minute between tries
    if (this.failures) await sleep(Math.min(60_000, 1000 * 2 ** (this.failures - 1)), undefined, { signal: this.stopping.signal, ref: false }).catch(() => undefined);
    if (this.closed || this.idle) return;
    const name = `runner-warm-${process.pid.toString(36)}-${(this.seq++).toString(36)}-${Date.now().toString(36)}`;
    try {
      const held = await holdGateway(this.runtime, {
        name,
        labels: { [LABELS.home]: this.o.home, [LABELS.role]: 'gateway', [WARM_OWNER_LABEL]: this.owner },
        egressNetwork: this.o.egressNetwork,
        ...(this.o.egressDns ? { egressDns: this.o.egressDns } : {}),
      });
      this.failures = 0;
      // its step's container made before it is offered (a step waiting for it would not wait for that)
      if (this.o.steps?.knows && !this.waiters.length && !this.closed) held.step = await this.makeStep(held);
      const waiter = this.waiters.shift();
      if (waiter) waiter(held);
      else if (this.closed || this.idle) await held.discard();
      else {
        this.ready.push(held);
        this.report();
      }
    } catch (err) {
      this.failures++;
      // a step waiting for it starts its own
      this.waiters.shift()?.(undefined);
      this.o.onProblem?.(`a warm gateway could not be made (steps start theirs cold meanwhile): ${errorMessage(err)}`);
    }
  }

  /** Every so often: a warm gateway that died while it waited is removed and made again (the status file stops counting it), and an idle pool gives its gateways back. */
  private async look(): Promise<void> {
    this.dropEnded();
    await this.giveBackIfIdle();
  }

  private dropEnded(): void {
    if (this.closed || !this.ready.some((h) => h.ended())) return;
    const live = this.ready.filter((h) => !h.ended());
    for (const h of this.ready.splice(0)) if (h.ended()) void h.discard().catch(() => undefined);
    this.ready.push(...live);
    this.fill();
    this.report();
  }

  private async giveBackIfIdle(): Promise<void> {
    if (this.closed || this.idle || Date.now() - this.lastTake < (this.o.idleMs ?? DEFAULT_IDLE_MS)) return;
    this.idle = true;
    const all = this.ready.splice(0);
    await Promise.all(all.map((h) => h.discard().catch(() => undefined)));
    this.report();
  }

  /** Warm gateways (and their networks) of this home whose runner is gone: on this host, a pid that is not alive. */
  private async removeStale(): Promise<void> {
    await removeDeadWarmGateways(this.runtime, this.o.home, this.owner);
    await this.o.steps?.removeStale();
    if (this.o.statusDir) await readWarmStatuses(this.o.statusDir, true);
  }
}

/**
 * Removes the warm gateways (and their networks) and warm step containers of this home whose runner is gone (on this
 * host, a pid not alive): those held, and those a step had taken (a gateway holds its step's config, a step container
 * runs its command; neither has a run's label, so a run's recovery does not see them). Called by the next pool of the home, and by every runner's start (reconcile.ts), with or
 * without --warm. Returns how many containers went.
 */
export async function removeDeadWarmGateways(
  runtime: ContainerRuntime,
  home: string,
  self = `${os.hostname()}:${process.pid}`,
  /** the home's containers, when the caller has just listed them (one engine call at a runner's start, not two) */
  listed?: ReadonlyArray<{ labels: Record<string, string> }>,
): Promise<number> {
  // gateways and the step containers made beside them (run/warm/), claimed or not: both carry their pool's owner
  const list = (listed ?? (await runtime.listByLabels({ [LABELS.home]: home }))).filter((c) => c.labels[WARM_OWNER_LABEL] !== undefined);
  const host = os.hostname();
  const stale = list.filter((c) => {
    const owner = c.labels[WARM_OWNER_LABEL];
    if (!owner) return false;
    const at = owner.lastIndexOf(':');
    return owner.slice(0, at) === host && owner !== self && !pidAlive(Number(owner.slice(at + 1)));
  });
  let removed = 0;
  for (const owner of new Set(stale.map((c) => c.labels[WARM_OWNER_LABEL]!))) {
    removed += await runtime.removeByLabels({ [LABELS.home]: home, [WARM_OWNER_LABEL]: owner });
    await removeOverlays(runtime, { [LABELS.home]: home, [WARM_OWNER_LABEL]: owner });
  }
  return removed;
}

/**
 * A swarm's overlay whose gateway was just removed is still in use on the manager's engine for a few seconds; a
 * runtime that does not know it asks of overlays (this machine's engine, in a CLI command's recovery) asked once
 * and left it. Asked again, 250 ms apart, for up to about 10 s.
 */
async function removeOverlays(runtime: ContainerRuntime, labels: Record<string, string>): Promise<void> {
  for (let tries = 40; ; ) {
    try {
      await runtime.removeNetworksByLabels(labels);
      return;
    } catch (err) {
      if (--tries <= 0 || !overlayBusy(err)) throw err;
      await sleep(250);
    }
  }
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  return (a ?? []).join(',') === (b ?? []).join(',');
}
