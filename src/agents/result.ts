/** After an agent step: what its CLI wrote to the result file (never through a symlink, size-capped): its usage, its error, its summary. */
import path from 'node:path';
import { readOutputsFile } from '../run/outputs.js';
import { eventsOf, summaryOf } from './events.js';
import { AGENT_RESULT_FILE, type AgentOutcome, type AgentSettings } from './preset.js';
import { PRESETS } from './presets.js';

const MAX_RESULT = 4 * 1024 * 1024;

export async function readAgentResult(presetName: string, ioDir: string, settings: AgentSettings): Promise<AgentOutcome & { problem?: string }> {
  const preset = PRESETS[presetName];
  if (!preset) return { problem: `no agent preset ${presetName}` };
  const read = await readOutputsFile(path.join(ioDir, AGENT_RESULT_FILE), `${preset.name}'s result`, MAX_RESULT);
  if (read.problem && read.text === undefined) return { problem: read.problem };
  if (read.text === undefined || read.text.trim() === '') return { problem: `${preset.name} wrote no result (it did not finish)` };
  try {
    const out = preset.parse(read.text, settings);
    // its summary: the last real message of the work, never a wrap-up's (events.ts says which is which)
    const summary = summaryOf(eventsOf(preset.name, (l) => preset.events(l), read.text));
    if (summary !== undefined) out.result = summary;
    else delete out.result;
    return out;
  } catch (err) {
    // A result the CLI (or the agent) mangled costs the step its usage, never the run its work.
    return { problem: `${preset.name}'s result could not be read: ${(err as Error).message}` };
  }
}
