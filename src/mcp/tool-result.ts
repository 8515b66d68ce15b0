/**
 * What a tool answers: JSON text, bounded, with every character a step
 * could have put there made visible (escape sequences, bidirectional
 * controls, C1) in each string before it is serialised (visibleDeep), or a tool error that says what is wrong and what to do. A
 * tool never throws to the SDK: a refusal is an answer the model reads.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage, RunnerError } from '../common/errors.js';
import { visibleDeep } from '../common/visible.js';
import { DeliveryRefused } from '../delivery/refusal.js';

/** No answer is longer than this many characters: a model's context is not a log store. */
export const MAX_ANSWER = 100_000;

export function answer(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: bounded(serialise(value)) }] };
}

/** The next thing to do after an error of this code, for a model to act on. Pure. */
export function nextStep(code: string): string {
  switch (code) {
    case 'run_unknown':
      return 'list_runs lists the runs this server can see.';
    case 'unsafe_name':
      return 'give a run id exactly as start_run, start_agent_task or list_runs gave it.';
    case 'outside_folders':
    case 'not_found':
      return 'list_pipelines lists the pipelines this server may run; agent tasks take a project under the folders it was started with.';
    case 'pipeline_invalid':
      return 'fix the file (validate_pipeline says what is wrong) or pick another (list_pipelines).';
    case 'bad_input':
      return 'list_pipelines shows the inputs each pipeline takes.';
    case 'no_diff':
      return 'run_status says where the run stands; wait_for_run waits for it to end.';
    case 'no_log':
      return 'run_status says why.';
    case 'secret_missing':
      return 'the secret goes in the file the server was started with (--secrets-file), never in a tool argument: ask the user to add it.';
    case 'busy':
      return 'wait_for_run waits for one of the runs this server started to end (list_runs lists them); then start this again.';
    case 'stopping':
      return 'the server is stopping: try again once it is back.';
    default:
      return '';
  }
}

export function failure(err: unknown): CallToolResult {
  const code = err instanceof RunnerError ? err.code : 'internal';
  const then = nextStep(code);
  const lines = [errorMessage(err), ...(then ? [`What to do: ${then}`] : [])];
  const body: Record<string, unknown> = { error: lines.join('\n'), code };
  if (err instanceof DeliveryRefused && err.details.length) body.details = err.details.slice(0, 50);
  return { isError: true, content: [{ type: 'text', text: bounded(serialise(body)) }] };
}

/** JSON text of a value whose every string was made visible first: the client's decoded strings hold no control character, and the text stays JSON. */
function serialise(value: unknown): string {
  return JSON.stringify(visibleDeep(value), null, 2);
}

function bounded(text: string): string {
  return text.length <= MAX_ANSWER ? text : `${text.slice(0, MAX_ANSWER)}\n… (${text.length - MAX_ANSWER} more characters cut: ask for less)`;
}
