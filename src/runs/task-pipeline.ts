/**
 * The pipeline an agent task is: one agent step on a project, with the
 * prompt as its input (never spliced into the file), and the verify command,
 * when given, as a step marked verify (merge and apply refuse the run unless
 * it passed). Always a git repository's: the agent works on a branch, the
 * user's checkout untouched until merge_run. Written under the home and run like any other pipeline. Pure.
 */
import { stringify } from 'yaml';
import { namesThisMachine } from '../plan/host-model.js';

export const TASK_AGENTS = ['claude-code', 'codex', 'opencode'] as const;
export type TaskAgent = (typeof TASK_AGENTS)[number];

/** the key each preset's agent calls its model with, from the server's --secrets-file */
export const TASK_CREDENTIAL: Record<TaskAgent, string> = { 'claude-code': 'ANTHROPIC_API_KEY', codex: 'OPENAI_API_KEY', opencode: 'ANTHROPIC_API_KEY' };

export interface TaskFacts {
  /** the pipeline's name: task-<id> */
  name: string;
  /** the project's real path */
  project: string;
  agent: TaskAgent;
  verify?: string | undefined;
  /** the model API root the agent calls, when not the preset's default */
  baseUrl?: string | undefined;
}

export function taskPipeline(f: TaskFacts): string {
  const doc = {
    version: 1,
    name: f.name,
    description: `An agent task handed over through MCP: ${f.agent} on ${f.project}${f.verify ? ', then the verify command' : ''}.`,
    project: { path: f.project, push: 'never' },
    inputs: { task: { description: 'What the agent is to do (the prompt the MCP client gave).' } },
    // a model on this machine takes no key (docs/agents.md, A model on your machine)
    ...(namesThisMachine(f.baseUrl) ? {} : { secrets: [TASK_CREDENTIAL[f.agent]] }),
    agents: { coder: { use: f.agent, ...(f.agent === 'codex' ? {} : { max_turns: 40 }), ...(f.baseUrl ? { base_url: f.baseUrl } : {}) } },
    steps: [
      { id: 'implement', agent: 'coder', timeout: '30m', prompt: '${{ inputs.task }}\n\nEnd with one line that says what you changed.\n' },
      ...(f.verify ? [{ id: 'verify', image: 'runner/toolchain:latest', timeout: '20m', run: `${f.verify}\n`, verify: true }] : []),
    ],
  };
  return `# Written by runner mcp for start_agent_task; the prompt is the run's input "task".\n${stringify(doc, { lineWidth: 0 })}`;
}
