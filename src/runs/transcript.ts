/** An agent step's transcript (steps/<step>.transcript.jsonl), a bounded slice of its events in the one shape (src/agents/transcript.ts), as `runner logs --transcript --json` gives them. */
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { RunnerError } from '../common/errors.js';
import type { AgentEvent } from '../agents/events.js';
import { shownEvent, transcriptEvents } from '../agents/transcript.js';
import { safeName } from '../workspace/names.js';

const MAX_BYTES = 64_000;

export async function readTranscript(dir: string, runId: string, step: string, from: number, maxLines: number): Promise<{ events: AgentEvent[]; nextFrom: number; more: boolean }> {
  if (safeName(step, 'step') !== step) throw new RunnerError('unsafe_name', `step ${JSON.stringify(step)} is not a step id: give it as run_status names it`);
  const input = createReadStream(path.join(dir, 'steps', `${step}.transcript.jsonl`));
  const opened = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    input.once('open', () => resolve(undefined));
    input.once('error', (err) => resolve(err));
  });
  if (opened) {
    if (opened.code === 'ENOENT') throw new RunnerError('no_log', `run ${runId} has no transcript for step ${step}: only an agent preset's steps have one, once they ran`);
    throw new RunnerError('no_log', `the transcript of ${step} could not be read (${opened.code})`);
  }
  const events: AgentEvent[] = [];
  let n = 0;
  let bytes = 0;
  let more = false;
  try {
    for await (const event of transcriptEvents(input)) {
      if (n++ < from) continue;
      if (events.length >= maxLines || bytes >= MAX_BYTES) {
        more = true;
        break;
      }
      const shown = shownEvent(event);
      events.push(shown);
      bytes += JSON.stringify(shown).length;
    }
  } finally {
    input.destroy();
  }
  return { events, nextFrom: from + events.length, more };
}
