/**
 * The steps whose image is `devcontainer` get the project's dev container, prepared once per content
 * (src/container/devcontainer/): their plans are given its image and its environment (their pipeline's env: over it).
 * The preparing commands get the first such step's way out: its network, or, when it allows hosts (egress:), a
 * gateway of their own that allows those hosts (no model, no credential, no budget: preparing calls no model).
 */
import { errorMessage } from '../common/errors.js';
import type { Masker } from '../common/mask.js';
import { mountTransport } from '../container/local/mount-transport.js';
import type { ContainerRuntime, Mount } from '../container/runtime.js';
import { DEVCONTAINER_IMAGE, preparingLabels, prepareDevcontainer, type PreparedDevcontainer, type PreparingWay } from '../container/devcontainer/prepare.js';
import { agentLayer } from '../container/devcontainer/agent-layer.js';
import { PRESETS } from '../agents/presets.js';
import { RunSpend } from '../gateway/host/run-spend.js';
import { CA_PATH } from '../plan/company-network.js';
import { inspectsTls } from '../plan/gateway-inspection.js';
import { untrustedLine } from '../plan/untrusted-upstream.js';
import { CONTAINER_PATHS } from '../plan/render.js';
import { GATEWAY_NETWORK, PROXY_ENV, type StepPlan } from '../plan/step-plan.js';
import type { RunSettings } from '../settings/run-settings.js';
import { companyNetworkOnDisk } from './ca-copy.js';
import { companyPart } from './step-addons/company-network.js';
import { unreachableLine } from './step-addons/gateway.js';
import { openStepWay } from './step-network.js';

export interface DevcontainerUse {
  runtime: ContainerRuntime;
  /** the runner home: the company's CA bundle is copied there for the preparing container, as for a step */
  home: string;
  project: string;
  settings: RunSettings;
  masker: Masker;
  say: (line: string) => void;
  /** what the file asks that the runner ignores, said before the preparation */
  warn: (line: string) => void;
}

/** Prepares the dev container when a step runs in it, and points those steps' plans at it; undefined when none does. */
export async function useDevcontainer(u: DevcontainerUse, plans: StepPlan[]): Promise<PreparedDevcontainer | undefined> {
  const inside = plans.filter((p) => !p.approval && p.image === DEVCONTAINER_IMAGE);
  const first = inside[0];
  if (!first) return undefined;
  const gated = first.network === GATEWAY_NETWORK && first.gateway !== undefined;
  // a gateway that inspects TLS needs its CA trusted by the commands' tools, which a preparing container is not given yet
  const inspected = gated && inspectsTls(withoutModel(first).gateway);
  if (inspected) u.say(`dev container: step ${first.id}'s egress: has rules or credentials (its gateway inspects TLS): the preparing commands get no network (docs/devcontainer.md)`);
  const prepared = await prepareDevcontainer(u.runtime, {
    project: u.project,
    workspace: CONTAINER_PATHS.workspace,
    home: CONTAINER_PATHS.home,
    sandbox: { memoryBytes: first.memoryBytes, cpus: first.cpus, pids: first.pids, openFiles: first.openFiles, fileSizeBytes: first.fileSizeBytes, network: gated ? 'none' : first.network, timeoutMs: first.timeoutMs },
    ...(gated && !inspected ? { openWay: () => preparingWay(u, first) } : {}),
    ...(await preparingCompany(u)),
    say: u.say,
    warn: u.warn,
  });
  // an agent preset's step: the project's image with the preset's CLI added (once per image, kept)
  const withAgent = new Map<string, Promise<string>>();
  for (const p of inside) {
    const preset = p.preset !== undefined ? PRESETS[p.preset] : undefined;
    if (preset && !withAgent.has(preset.name)) withAgent.set(preset.name, agentLayer(u.runtime, prepared.image, preset.image, preset.name, u.say));
    p.image = preset ? await withAgent.get(preset.name)! : prepared.image;
    p.env = { ...prepared.env, ...p.env };
  }
  return prepared;
}

/** The company's CA bundle and mirrors for the preparing commands, as a step gets them (its copy in the home). */
async function preparingCompany(u: DevcontainerUse): Promise<{ company?: { mounts: Mount[]; env: Record<string, string> } }> {
  if (!u.settings.company) return {};
  const part = companyPart(await companyNetworkOnDisk(u.home, u.settings.company));
  // the bundle at its own path alone, where the variables point: not over the image's system bundle, which a
  // preparing `apt-get install ca-certificates` must be free to rewrite
  const mounts = (part?.mounts ?? []).filter((m) => m.target === CA_PATH);
  return part ? { company: { mounts, env: part.envDefaults ?? {} } } : {};
}

/** The step's gateway plan with only what preparing needs: the hosts and their rules. */
function withoutModel(plan: StepPlan): StepPlan {
  const g = plan.gateway!;
  return { ...plan, gateway: { egress: g.egress, ...(g.rules ? { rules: g.rules } : {}) } };
}

async function preparingWay(u: DevcontainerUse, plan: StepPlan): Promise<PreparingWay> {
  const egress = u.settings.egress;
  const way = await openStepWay({
    place: mountTransport(u.runtime).gateways,
    plan: withoutModel(plan),
    name: `runner-devcontainer-prepare-${process.pid}-${Date.now().toString(36)}-gw`,
    labels: preparingLabels(),
    secrets: {},
    spending: {
      egressNetwork: egress.network,
      egressPrivate: egress.private,
      egressDns: egress.dns,
      egressProxy: egress.proxy,
      company: u.settings.company,
      spend: new RunSpend(undefined, undefined),
    },
    masker: u.masker,
    timeoutMs: plan.timeoutMs,
    onEvent: (e) => {
      if (e.event === 'refused') u.say(`dev container gateway: refused ${e.host}: ${e.reason} (not in step ${plan.id}'s egress:)`);
      else if (e.event === 'untrusted') u.say(`dev container ${untrustedLine(e, u.settings.company).replace(/^runner /, '')}`);
      else if (e.event === 'unreachable') u.say(`dev container ${unreachableLine(e).replace(/^runner /, '')}`);
      else if (e.event === 'error') u.say(`dev container gateway: ${e.message}`);
    },
    onOverBudget: () => undefined,
    onLost: (why) => u.say(`dev container gateway: ${why}`),
  });
  return {
    network: way.network,
    ...(way.dns ? { dns: way.dns } : {}),
    ...(way.hosts ? { hosts: way.hosts } : {}),
    ...(way.up ? { up: way.up } : {}),
    env: { ...PROXY_ENV },
    close: async () => {
      await way.close(undefined).catch((err: unknown) => u.say(`dev container gateway: ${errorMessage(err)}`));
    },
  };
}
