/**
 * How the step's workspace reaches its container and its work comes back
 * (the engine's StepTransport: mounted, or by tar to another node with a copy
 * of the branch's history as its .git): the last add-on, it makes the
 * finished spec over; at the step's end its work is in the workspace again,
 * or it says why not.
 */
import type { Prepared, StepTransport } from '../../container/runtime.js';
import type { StepAddon } from './addon.js';

export function transportAddon(transport: StepTransport): StepAddon {
  return {
    name: 'transport',
    open: async (step) => {
      const ws = step.c.ws;
      let prepared: Prepared | undefined;
      return {
        reshape: async (spec, way) => {
          prepared = await transport.prepare(spec, {
            workspace: ws.path,
            io: step.ioDir,
            owner: step.user,
            relay: way?.relay,
            gitCopy: ws.gitCopy && ((into: string) => ws.gitCopy!(into)),
            note: (text) => step.say(`runner: ${text}`),
            warm: step.c.spending.warm,
          });
          return prepared.spec;
        },
        // a step on another node sends its work back: the workspace and its outputs are here again before anything reads them
        close: async () => {
          const problem = await prepared?.finish();
          return problem ? { problems: [problem] } : undefined;
        },
      };
    },
  };
}
