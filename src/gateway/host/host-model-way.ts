/**
 * A step's way to a model on the runner's machine, opened before its gateway:
 * the model is asked first (one that does not answer refuses the step at
 * once, naming its address), then a relay is opened on this machine's
 * address on the egress network (model-relay.ts). Refused, saying why, where
 * the runner cannot open one the gateway reaches: on a swarm (the gateway
 * runs on the manager), or when the runner is not on the engine's machine's
 * network (a runner in a container with a network of its own, a remote
 * engine; the compose deployment's runner shares the host's network, so it can).
 */
import { ContainerError } from '../../common/errors.js';
import type { ContainerRuntime } from '../../container/runtime.js';
import type { HostModel } from '../../plan/host-model.js';
import { noAnswer, openModelRelay, probeModel, type ModelRelay } from './model-relay.js';

/** The code of a step refused for its model on this machine. */
export const MODEL_UNREACHABLE = 'model_unreachable';

export interface HostModelWayOptions {
  model: HostModel;
  runtime: ContainerRuntime;
  /** the network the gateway reaches out on: the relay listens on this machine's address there */
  egressNetwork: string;
  /** the gateway runs on another machine (a swarm's manager) */
  remote: boolean;
  onProblem(message: string): void;
  onDown(message: string): void;
}

const refused = (message: string) => new ContainerError(MODEL_UNREACHABLE, message);

/** Throws a ContainerError (model_unreachable) saying what to do when the model cannot be reached this way. */
export async function openHostModelWay(o: HostModelWayOptions): Promise<ModelRelay> {
  const { model } = o;
  if (o.remote) {
    throw refused(
      `the agent's base_url ${model.shown} is this machine, which a step's gateway on --engine swarm does not reach (it runs on the swarm's manager, where ${model.host} is the gateway itself): give base_url an address the manager reaches, the model listening there, or run on the local engine`,
    );
  }
  const why = await probeModel(model);
  if (why) throw refused(`${noAnswer(model, why)}: start it (ollama serve, vllm serve, llama-server), or correct the agent's base_url`);
  const bind = (await o.runtime.networkGateways(o.egressNetwork)).find((a) => /^\d+\.\d+\.\d+\.\d+$/.test(a));
  const cannot = (detail: string) =>
    refused(
      `the agent's base_url ${model.shown} is this machine, which its gateway (in a container) reaches through a relay the runner opens on this machine's address on network ${o.egressNetwork}, and ${detail}: run the runner on the engine's machine, or give base_url an address the engine's containers reach (the model listening there)`,
    );
  if (!bind) throw cannot(`the engine gives that network no IPv4 gateway address`);
  try {
    return await openModelRelay({ bind, model, onProblem: o.onProblem, onDown: o.onDown });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw cannot(
      code === 'EADDRNOTAVAIL'
        ? `the runner cannot listen on ${bind}: it does not run on the engine's machine's network (a runner in a container of its own network, where ${model.host} is that container: the compose deployment's network_mode: host avoids it; or a remote engine)`
        : `the runner cannot listen on ${bind} (${code ?? (err as Error).message})`,
    );
  }
}
