/** The MCP server the runner offers: its name, its instructions to the model, its tools over a backend. */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpBackend } from './backend.js';
import { registerTools } from './tools.js';

const INSTRUCTIONS = `The runner runs work in sandboxes: every step in its own container, on a git worktree of its own branch; the user's project changes only when merge_run or apply_run delivers a run.
To hand a coding task to an agent: start_agent_task (project, prompt, optional verify command), then wait_for_run until ended, then run_diff, then (with the user's consent) merge_run.
To run a pipeline: list_pipelines, then start_run. run_status, run_log and step_transcript show how a run went.`;

export function createMcpServer(backend: McpBackend, version: string): McpServer {
  const server = new McpServer({ name: 'runner', version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  registerTools(server, backend);
  return server;
}
