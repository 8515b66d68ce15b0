/**
 * An agent preset's step (src/agents/): its CLI's events followed while it
 * runs, rendered into its log as they come (its transcript kept as it wrote
 * them), and at its end its machine-readable result: its final message (the
 * step's `result`) and what it says it used.
 */
import path from 'node:path';
import { AGENT_RESULT_FILE } from '../../agents/preset.js';
import { PRESETS } from '../../agents/presets.js';
import { renderAgentEvent } from '../../agents/render.js';
import { readAgentResult } from '../../agents/result.js';
import { followAgentEvents } from '../agent-follow.js';
import { NOTHING, type AddonReport, type StepAddon } from './addon.js';

export const agentEventsAddon: StepAddon = {
  name: 'agent',
  open: async (step) => {
    const { plan, store, unit } = step.c;
    if (!plan.preset) return NOTHING;
    const presetName = plan.preset;
    const preset = PRESETS[presetName];
    const follow =
      preset &&
      followAgentEvents(
        path.join(step.ioDir, AGENT_RESULT_FILE),
        store.stepTranscriptPath(unit.name),
        preset,
        (event) => {
          for (const l of renderAgentEvent(event)) step.stdout(l);
        },
        (message) => step.log(`runner: ${message}`),
      );
    return {
      close: async () => {
        // the agent's last events (on another node: all of them, once its work came back) are in its log before the log ends
        await follow?.stop();
        // its CLI's machine-readable result: its final message and what it says it cost (behind a gateway, only its
        // turns and session count: the gateway's sums replace the rest)
        return agentReport(await readAgentResult(presetName, step.ioDir, plan.agentSettings ?? {}));
      },
    };
  },
};

/** What an agent's result adds to its step's record. Pure. */
export function agentReport(agent: Awaited<ReturnType<typeof readAgentResult>>): AddonReport {
  const problems = [...(agent.problem ? [agent.problem] : []), ...(agent.error ? [agent.error] : [])];
  return {
    ...(agent.usage ? { usage: agent.usage } : {}),
    // its final message was in its log, live, with the rest of its events
    ...(agent.result !== undefined ? { outputs: { result: agent.result } } : {}),
    ...(problems.length ? { problems } : {}),
  };
}
