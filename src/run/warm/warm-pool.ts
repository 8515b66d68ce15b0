/**
 * The warm pool a long-lived runner keeps (`runner serve|exec|mcp --warm N`):
 * N gateways made ahead where the engine's steps have theirs, and, where the
 * steps run on that same engine with the runner's disk mounted (the local
 * engine, Podman), a step's container beside each (warm-steps.ts). One
 * place for the three doors.
 */
import path from 'node:path';
import { GatewayPool, WARM_OWNER_LABEL } from '../../gateway/host/gateway-pool.js';
import { warmDir } from '../../gateway/host/warm-status.js';
import { LABELS, type ContainerRuntime, type StepTransport } from '../../container/runtime.js';
import os from 'node:os';
import { WarmSteps } from './warm-steps.js';

export interface WarmPoolOptions {
  size: number;
  home: string;
  settings: { egress: { network: string; dns?: string[] | undefined } };
  onProblem(message: string): void;
  /** the door keeping it: `serve`, `exec` or `mcp` */
  command: string;
}

/** the warm step containers' directories, in the home: on the filesystem of the runs' worktrees, which take their place */
/**
 * how many shapes of step a pool keeps, the latest first: the containers it makes (as many as its gateways) are of
 * those the fewest waiting have, and a step takes the one made for its image and project. More shapes than gateways
 * cost nothing but a template each; fewer would have an agent and a verify of another image, or two pipelines,
 * remake the waiting containers at each step.
 */
export const KEEP_SHAPES = 8;

export function warmStepsDir(home: string): string {
  return path.join(home, 'warm-steps');
}

export function warmPool(engine: { runtime: ContainerRuntime; transport?: StepTransport | undefined }, o: WarmPoolOptions): GatewayPool {
  const runtime = engine.transport?.gateways.runtime ?? engine.runtime;
  const createHeld = runtime.createHeld?.bind(runtime);
  // the owner the pool labels its gateways with (gateway-pool.ts): its step containers go with them
  const owner = `${os.hostname()}:${process.pid}`;
  const steps =
    createHeld && runtime === engine.runtime && !engine.transport?.noHostMounts
      ? new WarmSteps(Object.assign(runtime, { createHeld }), { dir: warmStepsDir(o.home), keep: KEEP_SHAPES, labels: { [LABELS.home]: o.home, [WARM_OWNER_LABEL]: owner }, onProblem: o.onProblem })
      : undefined;
  return new GatewayPool(runtime, {
    size: o.size,
    home: o.home,
    egressNetwork: o.settings.egress.network,
    egressDns: o.settings.egress.dns,
    onProblem: o.onProblem,
    statusDir: warmDir(o.home),
    command: o.command,
    ...(steps ? { steps } : {}),
  });
}
