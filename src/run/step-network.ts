/**
 * How a step reaches out, for the time of the step: its plan's network as it
 * is, or (a step with egress:, an agent preset) a gateway of its own, which
 * holds the model's credential and meters what the step may spend. run-step
 * asks for a way and closes it; it does not know which it got.
 */
import type { WarmStep } from './warm/warm-steps.js';
import type { AgentUsage } from '../agents/preset.js';
import { errorMessage } from '../common/errors.js';
import type { Masker } from '../common/mask.js';
import type { GatewayPlace } from '../container/runtime.js';
import { GATEWAY_HOST, RELAY_PORT, type GatewayEvent, type ModelRoute } from '../gateway/config.js';
import type { RelayTarget } from '../gateway/relay.js';
import { allowance } from '../gateway/host/budget.js';
import { usageFromCalls } from '../gateway/host/metering.js';
import type { RunSpend } from '../gateway/host/run-spend.js';
import { openHostModelWay } from '../gateway/host/host-model-way.js';
import type { ModelRelay } from '../gateway/host/model-relay.js';
import type { WarmGateways } from '../gateway/host/gateway-pool.js';
import { startGateway, type GatewayGift, type OpenGateway } from '../gateway/host/step-gateway.js';
import { DEFAULT_PRICES, type Price } from '../gateway/prices.js';
import type { StepPlan } from '../plan/step-plan.js';
import { mirrorAllow, type CompanyNetwork } from '../plan/company-network.js';
import { inspectionFor } from '../plan/gateway-inspection.js';
import { hostModel } from '../plan/host-model.js';
import type { UpstreamProxy } from '../gateway/upstream-proxy.js';

/** What a run's steps spend against, and where their gateways reach out. */
export interface RunSpending {
  /** the network gateways reach out on (RUNNER_EGRESS_NETWORK, default bridge) */
  egressNetwork: string;
  /** private ranges an allowed name may lead to (--egress-private, RUNNER_EGRESS_PRIVATE); none by default */
  egressPrivate?: string[] | undefined;
  /** name servers the gateways resolve allowed names with (RUNNER_EGRESS_DNS); absent: the engine's */
  egressDns?: string[] | undefined;
  /** the company's proxy the gateways reach out through */
  egressProxy?: UpstreamProxy | undefined;
  /** the CA bundle and mirrors every step gets; the gateways trust the one and allow the others */
  company?: CompanyNetwork | undefined;
  /** the file's prices over the built-in table */
  prices?: Record<string, Price> | undefined;
  /** what the run's calls spent so far, against the run's and the day's budget */
  spend: RunSpend;
  /** gateways made ahead: a step takes one (its config written then) rather than start its own */
  warm?: WarmGateways;
}

export interface StepWayReport {
  /** metered usage: replaces what the CLI reported */
  usage?: AgentUsage;
  /** the gateway refused a model call for the budget */
  budgetExhausted: boolean;
  /** the gateway ended before the step: the step lost its way out, its usage may miss calls */
  died?: string;
  /** the way never came up (the step was stopped for it): the code for the step's record */
  error?: 'gateway_failed';
  refused: Array<{ host: string; count: number }>;
  refusedOthers: number;
  /** requests refused for not being model calls */
  pathsRefused: number;
  /** requests an egress rule refused, by rule */
  rulesRefused?: Array<{ rule: string; count: number }>;
  /** requests stopped for carrying a secret's value, by secret name */
  secretsRefused?: Array<{ secret: string; count: number }>;
  /** what went wrong with a model on this machine while the step ran ("the model at ... does not answer (connection refused)") */
  modelProblems?: string[];
}

export interface StepWay {
  network: string;
  /** the step's container, made ahead beside its warm gateway: the step claims it, or discards it (src/run/warm/) */
  warmStep?: WarmStep;
  dns?: string[];
  /** the step's command waits for this (its gateway listening): its container is made and started meanwhile */
  up?: Promise<void>;
  /** its gateway relays to the runner's transfer server too (a step on another node): where the step finds it */
  relay?: RelayTarget;
  /** names the step finds without a name server: its gateway's */
  hosts?: Record<string, string>;
  /** what the step's log says as it starts (a model on this machine that a USD budget does not bound) */
  notes?: string[];
  /** the gateway's CA certificate, once `up` resolved, when it inspects TLS: the step must trust it */
  caPem?(): string | undefined;
  close(cliUsage: AgentUsage | undefined): Promise<StepWayReport | undefined>;
}

export interface WayOptions {
  /** the step's image, project, user and limits (run/warm/ warmKey): a warm gateway with a step container made for them is taken first */
  warmKey?: string;
  /** where the gateway runs (the step's own engine, or a swarm's manager, so the key never reaches a worker), its name per try, and the runner's transfer server it relays to when the step is on another node */
  place: GatewayPlace;
  plan: StepPlan;
  /** unique per run of the step: names the gateway's container and network */
  name: string;
  labels: Record<string, string>;
  secrets: Record<string, string>;
  spending: RunSpending;
  masker: Masker;
  /** a call, a refusal, a problem, as it happens */
  onEvent(e: GatewayEvent): void;
  /** the run's or the day's budget is spent while the step runs: stop it */
  onOverBudget(why: string): void;
  /** the way did not come up after the step's container was started (its gateway never listened): stop it */
  onLost(why: string): void;
  /** the step's timeout: the gateway stops by itself a while after it, should the runner die */
  timeoutMs: number;
}

/** A step's calls.jsonl lines at most (a line is about 250 bytes); its usage counts every call. */
export const MAX_CALL_LINES = 10_000;

export async function openStepWay(o: WayOptions): Promise<StepWay> {
  const g = o.plan.gateway;
  if (!g) return { network: o.plan.network, close: async () => undefined };
  // a step on another node: its gateway relays to the runner's transfer server too
  const relayTo = await o.place.relayTo();
  const key = g.model?.credential ? o.secrets[g.model.credential] : undefined;
  const s = o.spending;
  // a model on this machine: asked first, then reached through a relay of the runner's (refused, saying why, where there can be none)
  const onHost = hostModel(g.model?.upstream);
  const relay = onHost
    ? await openHostModelWay({
        model: onHost,
        runtime: o.place.runtime,
        egressNetwork: s.egressNetwork,
        remote: relayTo !== undefined,
        onProblem: (message) => o.onEvent({ event: 'error', message }),
        onDown: (why) => o.onLost(why),
      })
    : undefined;
  const model: ModelRoute | undefined = g.model && {
    kind: g.model.kind,
    upstream: relay?.upstream ?? g.model.upstream,
    ...(key ? { auth: authFor(g.model.credential!, key) } : {}),
  };
  // the credentials' values and every secret of the run: in the gateway's stdin, nowhere else
  const inspect = inspectionFor(g, o.secrets);
  const spend = s.spend;
  let calls = 0;
  const day = spend.daySpent();
  const limit = allowance({ step: g.budget, run: spend.run ? { budget: spend.run, spent: spend.spent } : undefined, day: spend.day && day ? { budget: spend.day.budget, spent: day } : undefined });
  const gift: GatewayGift = {
    config: {
      allow: [...g.egress, ...mirrorAllow(s.company)],
      privateAllowed: s.egressPrivate ?? [],
      ...(model ? { model } : {}),
      ...(limit ? { allowance: limit } : {}),
      // a model on this machine borrows a hosted model's name (Claude Code asks for claude-sonnet-...): priced only as the file's prices: say
      prices: onHost ? { ...(s.prices ?? {}) } : { ...DEFAULT_PRICES, ...(s.prices ?? {}) },
      deadlineMs: o.timeoutMs + 60_000,
      ...(s.company?.ca ? { ca: s.company.ca.pem } : {}),
      ...(s.company?.hostCa ? { hostCa: s.company.hostCa.pem } : {}),
      // the relay is on this machine, never behind the company's proxy
      ...(s.egressProxy ? { proxy: relay ? { ...s.egressProxy, noProxy: [...s.egressProxy.noProxy, `${relay.host}:${relay.port}`] } : s.egressProxy } : {}),
      ...(relayTo ? { relay: { port: RELAY_PORT, to: relayTo } } : {}),
      ...(inspect ? { inspect } : {}),
    },
    onEvent: (e) => {
      if (e.event === 'call' && !e.refused) {
        spend.add(e.inputTokens + e.outputTokens + e.cacheReadTokens + e.cacheWriteTokens, e.chargedUsd ?? e.costUsd ?? 0);
        // the call log is bounded; the totals (and the budget) count every call
        if (++calls === MAX_CALL_LINES + 1) o.onEvent({ event: 'error', message: `more than ${MAX_CALL_LINES} model calls: calls.jsonl lists the first ${MAX_CALL_LINES} of this step, its usage counts them all` });
        if (calls > MAX_CALL_LINES) return;
      }
      o.onEvent(e);
    },
  };
  // the step's container starts while its gateway's program does: returned once the gateway's container runs
  const start = (name: string) => startGateway(o.place.runtime, { name, labels: o.labels, egressNetwork: s.egressNetwork, ...(s.egressDns ? { egressDns: s.egressDns } : {}), ...gift });
  // a warm gateway (made ahead where the steps' gateways are: this engine, or a swarm's manager on an overlay the
  // nodes share); one for a step on another node is given its relay to the runner's transfer with its config
  const held = await s.warm?.take(s.egressNetwork, s.egressDns, o.warmKey);
  let gw: OpenGateway;
  try {
    gw = held ? held.give(gift) : await tried(start, o.name, o.place);
  } catch (err) {
    await relay?.close();
    throw err;
  }
  gw.listening.catch((err) => o.onLost(errorMessage(err)));
  if (relay) void admitGateway(gw, relay, o.onLost);
  const unwatch = spend.watch(o.onOverBudget);
  const notes = onHost && limit?.usd !== undefined && !Object.keys(s.prices ?? {}).length
    ? [`the model at ${onHost.shown} is on this machine, and its calls are unpriced (the file's prices: names no model): a budget in USD does not bound them, a budget in tokens does`]
    : [];
  if (held) notes.push('gateway: a warm one, made ahead for no step in particular and given to this one alone (--warm)');
  return {
    ...(notes.length ? { notes } : {}),
    network: gw.network,
    dns: gw.dns,
    up: gw.listening,
    hosts: { [GATEWAY_HOST]: gw.dns[0]! },
    ...(relayTo ? { relay: { host: gw.dns[0]!, port: RELAY_PORT } } : {}),
    caPem: gw.caPem,
    ...(held?.step ? { warmStep: held.step } : {}),
    close: async (cliUsage) => {
      unwatch();
      const r = await gw.close();
      await relay?.close();
      const modelProblems = relay?.problems() ?? [];
      return {
        ...(g.model ? { usage: usageFromCalls(r.totals, cliUsage, o.plan.agentSettings?.model) } : {}),
        budgetExhausted: r.budgetRefused > 0,
        ...(r.died ? { died: r.died } : {}),
        ...(r.neverListened ? { error: 'gateway_failed' as const } : {}),
        refused: [...r.refused].map(([host, count]) => ({ host: o.masker.mask(host), count })).sort((a, b) => b.count - a.count),
        refusedOthers: r.refusedOthers,
        pathsRefused: r.pathsRefused,
        rulesRefused: [...r.rulesRefused].map(([rule, count]) => ({ rule: o.masker.mask(rule), count })).sort((a, b) => b.count - a.count),
        secretsRefused: [...r.secretsRefused].map(([secret, count]) => ({ secret: o.masker.mask(secret), count })).sort((a, b) => b.count - a.count),
        ...(modelProblems.length ? { modelProblems } : {}),
      };
    },
  };
}

/** The relay to a model on this machine serves the gateway's address on the egress network alone, once it is known. */
async function admitGateway(gw: OpenGateway, relay: ModelRelay, lost: (why: string) => void): Promise<void> {
  try {
    await gw.listening;
  } catch {
    return;
  }
  for (let i = 0; i < 50; i++) {
    const address = await gw.egressAddress().catch(() => undefined);
    if (address) return relay.admit(address);
    await new Promise((r) => setTimeout(r, 100));
  }
  lost("the step's gateway has no address on the egress network, so the model on this machine cannot be reached");
}

async function tried<T>(start: (name: string) => Promise<T>, base: string, tries: Pick<GatewayPlace, 'nameFor' | 'retryable'>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(tries.nameFor(base, attempt));
    } catch (err) {
      if (attempt >= 3 || !tries.retryable(err)) throw err;
      await new Promise((r) => setTimeout(r, 1000 * attempt));
    }
  }
}

/** Where a provider takes a credential: an Anthropic API key in x-api-key, anything else (OpenAI's, an OAuth token) as a bearer token. */
export function authFor(name: string, value: string): NonNullable<ModelRoute['auth']> {
  return name === 'ANTHROPIC_API_KEY' ? { header: 'x-api-key', value } : { header: 'authorization', value: `Bearer ${value}` };
}
