/**
 * The steps whose image is `devcontainer` get the project's dev container, prepared once per content
 * (src/container/devcontainer/): their plans are given its image and its environment (their pipeline's env: over it).
 */
import { GATEWAY_NETWORK, type StepPlan } from '../plan/step-plan.js';
import { CONTAINER_PATHS } from '../plan/render.js';
import type { ContainerRuntime } from '../container/runtime.js';
import { DEVCONTAINER_IMAGE, prepareDevcontainer, type PreparedDevcontainer } from '../container/devcontainer/prepare.js';

/** Prepares the dev container when a step runs in it, and points those steps' plans at it; undefined when none does. */
export async function useDevcontainer(runtime: ContainerRuntime, plans: StepPlan[], project: string, say: (line: string) => void): Promise<PreparedDevcontainer | undefined> {
  const inside = plans.filter((p) => !p.approval && p.image === DEVCONTAINER_IMAGE);
  const first = inside[0];
  if (!first) return undefined;
  // the preparing commands run under the first such step's limits, and its network when it names one: a step behind
  // a gateway (egress:) has none for them yet (docs/devcontainer.md)
  const network = first.network === GATEWAY_NETWORK ? 'none' : first.network;
  const prepared = await prepareDevcontainer(runtime, {
    project,
    workspace: CONTAINER_PATHS.workspace,
    sandbox: { memoryBytes: first.memoryBytes, cpus: first.cpus, pids: first.pids, openFiles: first.openFiles, fileSizeBytes: first.fileSizeBytes, network, timeoutMs: first.timeoutMs },
    say,
  });
  for (const p of inside) {
    p.image = prepared.image;
    p.env = { ...prepared.env, ...p.env };
  }
  return prepared;
}
