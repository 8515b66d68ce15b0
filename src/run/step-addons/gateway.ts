/**
 * A step's way out (src/run/step-network.ts): its plan's network as it is, or
 * a gateway of its own, which holds the model's credential and meters what the
 * step may spend, on the engine its transport names (a swarm's manager). What
 * the gateway says as it happens goes to the step's log, the run's events and
 * calls.jsonl; a budget spent while the step runs, or a gateway that never
 * came up, stops the step; at its end it reports the metered usage, the hosts
 * it refused, and a budget spent.
 */
import { chmod, mkdir, rm } from 'node:fs/promises';
import tls from 'node:tls';
import path from 'node:path';
import { writeFileAtomic } from '../../common/atomic-write.js';
import { ContainerError, errorMessage } from '../../common/errors.js';
import type { GatewayPlace } from '../../container/runtime.js';
import type { GatewayEvent } from '../../gateway/config.js';
import type { CompanyNetwork } from '../../plan/company-network.js';
import { untrustedLine } from '../../plan/untrusted-upstream.js';
import { MIN_SECRET_BYTES } from '../../gateway/secret-scan.js';
import { MODEL_UNREACHABLE } from '../../gateway/host/host-model-way.js';
import { inspectsTls } from '../../plan/gateway-inspection.js';
import { GATEWAY_CA_FILE_PREFIX, trustBundle, trustPart } from '../../plan/gateway-trust.js';
import { claimWarm, warmKey } from '../warm/warm-steps.js';
import { openStepWay, type StepWay, type StepWayReport } from '../step-network.js';
import type { RunStore } from '../store.js';
import { StepRefused, type AddonPart, type AddonReport, type AddonStep, type StepAddon } from './addon.js';

export function gatewayAddon(place: GatewayPlace): StepAddon {
  return {
    name: 'gateway',
    open: async (step) => {
      const { c } = step;
      // the run's or the day's budget spent by steps running at once: this one stops too
      let overBudget = false;
      // the way did not come up after the step's container started: the step stops, its gateway's failure said
      let lost = false;
      // rules and secrets a refusal was said for: said once each, the rest counted (the step's record, its log at the end)
      const said = new Set<string>();
      // hosts whose certificate the step will refuse: said when first asked, and again at the end, beside the tools' own failure
      const untrusted: string[] = [];
      let way;
      try {
        way = await openStepWay({
          place,
          plan: c.plan,
          name: `${step.name}-gw`,
          warmKey: warmKey({ image: c.plan.image, project: c.ws.project, user: `${step.user.uid}:${step.user.gid}`, memoryBytes: c.plan.memoryBytes, cpus: c.plan.cpus, pids: c.plan.pids }),
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
          onEvent: (e) => {
            if (e.event === 'untrusted' && untrusted.length < 8) untrusted.push(e.port === 443 ? e.host : `${e.host}:${e.port}`);
            gatewayEvent(c.store, c.unit.name, e, step.say, said, c.spending.company);
          },
        });
      } catch (err) {
        throw new StepRefused(err instanceof ContainerError && err.code === MODEL_UNREACHABLE ? MODEL_UNREACHABLE : 'gateway_failed', errorMessage(err));
      }
      let claimed = false;
      const short = shortSecrets(c.secrets);
      if (short.length) {
        step.say(`runner gateway: ${short.join(', ')} ${short.length === 1 ? 'is' : 'are'} shorter than ${MIN_SECRET_BYTES} bytes: the gateway does not look for ${short.length === 1 ? 'it' : 'them'} in requests (too short to tell from ordinary traffic)`);
      }
      // a gateway that inspects TLS: the step trusts its CA, which it says once it listens
      let trust: { part: AddonPart; file: string } | undefined;
      if (inspectsTls(c.plan.gateway)) {
        try {
          trust = await gatewayTrust(step, way);
        } catch (err) {
          await way.warmStep?.discard().catch(() => undefined);
          await way.close(undefined).catch(() => undefined);
          throw new StepRefused('gateway_failed', errorMessage(err));
        }
      }
      return {
        ...(trust?.part ?? {}),
        ...(way.notes ? { notes: [...(trust?.part.notes ?? []), ...way.notes] } : {}),
        way: { network: way.network, ...(way.dns ? { dns: way.dns } : {}), ...(way.hosts ? { hosts: way.hosts } : {}), ...(way.relay ? { relay: way.relay } : {}) },
        ...(way.up ? { holdUntil: way.up } : {}),
        // the step's container as it will be made: the shape of the pool's next warm ones, and this one's, made ahead, claimed if it fits
        reshape: async (spec) => {
          c.spending.warm?.learn?.(spec);
          const warm = way.warmStep;
          if (!warm) return spec;
          const r = await claimWarm(warm, spec, { ws: c.ws, runtime: c.deps.runtime, moved: c.workspaceMoved });
          if (r.spec.warm) {
            claimed = true;
            step.say('runner: container: a warm one, made ahead beside its gateway and given to this step alone (--warm)');
          } else step.log(`runner: container: the warm one made beside its gateway was not used: ${r.why}; made now`);
          return r.spec;
        },
        close: async (end) => {
          if (trust) await rm(trust.file, { force: true }).catch(() => undefined);
          if (way.warmStep && !claimed) await way.warmStep.discard().catch(() => undefined);
          const r = await way.close(end.usage).catch((e: unknown) => {
            c.deps.reporter.warn(`closing the step's gateway: ${errorMessage(e)}`);
            return undefined;
          });
          const report = wayReport(r, { overRun: overBudget && !c.deps.signal.aborted, exited: end.reason === 'exit' });
          return untrusted.length ? { ...report, logLines: [...(report.logLines ?? []), untrustedReminder(untrusted)] } : report;
        },
      };
    },
  };
}

/**
 * The bundle the step trusts (the run's, by default the host's own; else, with --ca-file none or no host bundle,
 * the public roots Node carries) and the gateway's CA, written in the runner home beside the company's copy (the
 * engine sees the home where the runner does), for the step alone.
 */
async function gatewayTrust(step: AddonStep, way: StepWay): Promise<{ part: AddonPart; file: string }> {
  const { c } = step;
  await way.up;
  const ca = way.caPem?.();
  if (!ca) {
    throw new Error(
      "the step's gateway did not say its CA: it does not inspect TLS, so this step's credentials and egress rules cannot hold (rebuild the gateway image with make images)",
    );
  }
  const roots = c.spending.company?.ca?.pem ?? tls.rootCertificates.join('\n');
  const bundle = trustBundle(ca, roots);
  const dir = path.join(c.home, 'network');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${GATEWAY_CA_FILE_PREFIX}${step.name}.pem`);
  await writeFileAtomic(file, bundle);
  // every step's user reads it, whoever it runs as
  await chmod(file, 0o644);
  return { part: trustPart(bundle, file), file };
}

/** What a step's way reported, for its record. Pure. */
export function wayReport(r: StepWayReport | undefined, o: { overRun: boolean; exited: boolean }): AddonReport {
  const logLines = [
    ...(r?.refused ?? []).map((x) => `runner gateway: refused ${x.host} ${x.count} time${x.count === 1 ? '' : 's'} in all`),
    ...(r?.pathsRefused ? [`runner gateway: refused ${r.pathsRefused} request${r.pathsRefused === 1 ? '' : 's'} that were not model calls`] : []),
    ...(r?.rulesRefused ?? []).map((x) => `runner gateway: the rule ${x.rule} refused ${x.count} request${x.count === 1 ? '' : 's'} in all`),
    ...(r?.secretsRefused ?? []).map((x) => `runner gateway: stopped ${x.count} request${x.count === 1 ? '' : 's'} carrying secret ${x.secret} in all`),
  ];
  const budget = (r?.budgetExhausted && o.exited) || o.overRun;
  const problems = [
    ...(budget
      ? [o.overRun ? "budget exhausted: the run's or the day's budget was spent while it ran (raise budget: in the pipeline file)" : "budget exhausted: the gateway refused a model call (see the step's log; raise budget: in the pipeline file)"]
      : []),
    ...(r?.died ? [r.died] : []),
    ...(r?.modelProblems ?? []),
  ];
  return {
    ...(budget ? { status: 'budget_exhausted' as const } : r?.died ? { status: 'failed' as const } : {}),
    // behind a gateway, what the model API reported is the step's usage, whatever the CLI printed
    ...(r?.usage ? { usage: r.usage } : {}),
    ...(r && (r.refused.length || r.rulesRefused?.length || r.secretsRefused?.length)
      ? {
          egress: {
            refused: r.refused,
            ...(r.refusedOthers ? { others: r.refusedOthers } : {}),
            ...(r.rulesRefused?.length ? { rules: r.rulesRefused } : {}),
            ...(r.secretsRefused?.length ? { secrets: r.secretsRefused } : {}),
          },
        }
      : {}),
    ...(r?.error ? { error: r.error } : {}),
    ...(problems.length ? { problems } : {}),
    ...(logLines.length ? { logLines } : {}),
  };
}

/** What the step's gateway said as it happened: in the step's log, the run's events and calls.jsonl. */
function gatewayEvent(store: RunStore, name: string, e: GatewayEvent, say: (line: string) => void, said: Set<string>, company: CompanyNetwork | undefined): void {
  const first = (key: string): boolean => (said.has(key) || said.size >= 256 ? false : (said.add(key), true));
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
  } else if (e.event === 'egress_refused') {
    // a rule the file wrote: said the first time, with what was asked; every one is an event
    const path = String(e.path).slice(0, 200);
    if (first(`rule ${e.rule}`)) say(`runner gateway: refused ${e.method} ${e.host}${path} (${e.reason}; the rule is ${e.rule})`);
    store.event('egress_refused', { step: name, host: e.host, method: e.method, path, rule: e.rule, reason: e.reason }, 'warn');
  } else if (e.event === 'secret_refused') {
    // the secret by its name, never its value
    if (first(`secret ${e.secret}`)) say(`runner gateway: stopped a request to ${e.host} that carried secret ${e.secret} (${e.form}, in its ${e.where})`);
    store.event('secret_refused', { step: name, host: e.host, secret: e.secret, where: e.where, form: e.form }, 'warn');
  } else if (e.event === 'unreachable') {
    // an allowed host that did not answer: said at once, where a tool retrying in silence would say nothing for minutes
    say(unreachableLine(e));
    store.event('egress_unreachable', { step: name, host: String(e.host).slice(0, 255), port: e.port, reason: String(e.reason).slice(0, 200) }, 'warn');
  } else if (e.event === 'untrusted') {
    // said once per host and port by the gateway; its words name the flag that fixes it
    say(untrustedLine(e, company));
    store.event('tls_untrusted', { step: name, host: String(e.host).slice(0, 255), port: e.port, reason: String(e.reason).slice(0, 100), issuer: String(e.issuer).slice(0, 200), hostTrusts: e.hostTrusts === true }, 'warn');
  } else if (e.event === 'error') {
    say(`runner gateway: ${e.message}`);
    store.event('gateway_error', { step: name, message: e.message }, 'warn');
  }
}

/** What the step's log says of an allowed host its gateway could not reach. Pure. */
export function unreachableLine(e: { host: string; port: number; reason: string }): string {
  const host = String(e.host).replace(/[\x00-\x1f\x7f-\x9f]/g, '?').slice(0, 255);
  const where = e.port === 443 || e.port === 80 ? host : `${host}:${e.port}`;
  const why = String(e.reason).replace(/[\x00-\x1f\x7f-\x9f]/g, '?').slice(0, 200);
  const hint = /ENOTFOUND|EAI_AGAIN/.test(why) ? 'its name does not resolve from the gateway' : 'no connection';
  return `runner gateway: ${where} is allowed but did not answer (${why}: ${hint}); tools like npm and pip retry such a host in silence for minutes. This machine may not reach it: a firewall, or a proxy to name with --egress-proxy (docs/company-networks.md)`;
}

/** The step's last word on the certificates it was told it will refuse. Pure. */
export function untrustedReminder(hosts: readonly string[]): string {
  const names = hosts.map((h) => String(h).replace(/[\x00-\x1f\x7f-\x9f]/g, '?').slice(0, 255));
  return `runner gateway: this step does not trust the certificate of ${names.join(', ')} (said above when first asked, with what fixes it: --ca-file, docs/company-networks.md)`;
}

/** The run's secrets too short for the gateway's check (it names them at the step's start), by name. */
export function shortSecrets(secrets: Readonly<Record<string, string>>): string[] {
  return Object.entries(secrets)
    .filter(([, v]) => v !== '' && Buffer.byteLength(v, 'utf8') < MIN_SECRET_BYTES)
    .map(([name]) => name)
    .sort();
}
