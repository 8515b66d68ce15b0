/**
 * A step's way out (src/run/step-network.ts): its plan's network as it is, or
 * a gateway of its own, which holds the model's credential and meters what the
 * step may spend, on the engine its transport names (a swarm's manager). What
 * the gateway says as it happens goes to the step's log, the run's events and
 * calls.jsonl; a budget spent while the step runs, or a gateway that never
 * came up, stops the step; at its end it reports the metered usage, the hosts
 * it refused, and a budget spent.
 */
import { errorMessage } from '../../common/errors.js';
import type { GatewayPlace } from '../../container/runtime.js';
import type { GatewayEvent } from '../../gateway/config.js';
import { openStepWay, type StepWayReport } from '../step-network.js';
import type { RunStore } from '../store.js';
import { StepRefused, type AddonReport, type StepAddon } from './addon.js';

export function gatewayAddon(place: GatewayPlace): StepAddon {
  return {
    name: 'gateway',
    open: async (step) => {
      const { c } = step;
      // the run's or the day's budget spent by steps running at once: this one stops too
      let overBudget = false;
      // the way did not come up after the step's container started: the step stops, its gateway's failure said
      let lost = false;
      let way;
      try {
        way = await openStepWay({
          place,
          plan: c.plan,
          name: `${step.name}-gw`,
          labels: step.labels,
          secrets: c.secrets,
          spending: c.spending,
          masker: c.masker,
          timeoutMs: c.plan.timeoutMs,
          onOverBudget: (why) => {
            if (overBudget) return;
            overBudget = true;
            step.say(`runner gateway: ${why}: the step is stopped`);
            step.stop();
          },
          onLost: (why) => {
            if (lost) return;
            lost = true;
            step.say(`runner gateway: ${why}: the step is stopped`);
            step.stop();
          },
          onEvent: (e) => gatewayEvent(c.store, c.unit.name, e, step.say),
        });
      } catch (err) {
        throw new StepRefused('gateway_failed', errorMessage(err));
      }
      return {
        way: { network: way.network, ...(way.dns ? { dns: way.dns } : {}), ...(way.hosts ? { hosts: way.hosts } : {}), ...(way.relay ? { relay: way.relay } : {}) },
        ...(way.up ? { holdUntil: way.up } : {}),
        close: async (end) => {
          const r = await way.close(end.usage).catch((e: unknown) => {
            c.deps.reporter.warn(`closing the step's gateway: ${errorMessage(e)}`);
            return undefined;
          });
          return wayReport(r, { overRun: overBudget && !c.deps.signal.aborted, exited: end.reason === 'exit' });
        },
      };
    },
  };
}

/** What a step's way reported, for its record. Pure. */
export function wayReport(r: StepWayReport | undefined, o: { overRun: boolean; exited: boolean }): AddonReport {
  const logLines = [
    ...(r?.refused ?? []).map((x) => `runner gateway: refused ${x.host} ${x.count} time${x.count === 1 ? '' : 's'} in all`),
    ...(r?.pathsRefused ? [`runner gateway: refused ${r.pathsRefused} request${r.pathsRefused === 1 ? '' : 's'} that were not model calls`] : []),
  ];
  const budget = (r?.budgetExhausted && o.exited) || o.overRun;
  const problems = [
    ...(budget
      ? [o.overRun ? "budget exhausted: the run's or the day's budget was spent while it ran (raise budget: in the pipeline file)" : "budget exhausted: the gateway refused a model call (see the step's log; raise budget: in the pipeline file)"]
      : []),
    ...(r?.died ? [r.died] : []),
  ];
  return {
    ...(budget ? { status: 'budget_exhausted' as const } : r?.died ? { status: 'failed' as const } : {}),
    // behind a gateway, what the model API reported is the step's usage, whatever the CLI printed
    ...(r?.usage ? { usage: r.usage } : {}),
    ...(r?.refused.length ? { egress: { refused: r.refused, ...(r.refusedOthers ? { others: r.refusedOthers } : {}) } } : {}),
    ...(r?.error ? { error: r.error } : {}),
    ...(problems.length ? { problems } : {}),
    ...(logLines.length ? { logLines } : {}),
  };
}

/** What the step's gateway said as it happened: in the step's log, the run's events and calls.jsonl. */
function gatewayEvent(store: RunStore, name: string, e: GatewayEvent, say: (line: string) => void): void {
  if (e.event === 'call') {
    store.recordCall({ step: name, ...e });
    if (e.worstCase) {
      const tokens = e.inputTokens + e.outputTokens + e.cacheReadTokens + e.cacheWriteTokens;
      say(`runner gateway: a model call ended without its usage (the step hung up, or the answer was cut): charged its worst case, ${tokens} tokens${e.costUsd !== null ? `, $${e.costUsd.toFixed(4)}` : ''}`);
    }
    if (e.refused === 'budget') {
      say('runner gateway: model call refused: the budget is spent');
      store.event('budget_exhausted', { step: name }, 'warn');
    }
  } else if (e.event === 'refused') {
    say(`runner gateway: refused ${e.host} (${e.reason})`);
    store.event('egress_refused', { step: name, host: e.host, reason: e.reason }, 'warn');
  } else if (e.event === 'error') {
    say(`runner gateway: ${e.message}`);
    store.event('gateway_error', { step: name, message: e.message }, 'warn');
  }
}
