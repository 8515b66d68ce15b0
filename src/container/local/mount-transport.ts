/**
 * The local engine's transport: the workspace is mounted, nothing travels,
 * and a step's gateway runs beside it on the same engine.
 */
import type { ContainerRuntime, StepTransport } from '../runtime.js';

export function mountTransport(runtime: ContainerRuntime): StepTransport {
  return {
    checkRun: async () => undefined,
    gateways: { runtime, relayTo: async () => undefined, nameFor: (base) => base, retryable: () => false },
    prepare: async (spec) => ({ spec, finish: async () => undefined }),
  };
}
