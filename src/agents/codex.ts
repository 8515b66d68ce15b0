/**
 * Codex CLI, headless: `codex exec --json` with approvals and its own sandbox
 * off (the container is the sandbox), the prompt on stdin (`-`: given a prompt
 * as an argument and a stdin that is not a terminal, it says "Reading
 * additional input from stdin..." and reads that too), analytics off (with
 * them, metrics go to ab.chatgpt.com), plugins, apps and update checks off
 * (they call out at start). It ignores OPENAI_BASE_URL: base_url becomes a
 * model provider of its config. It has no turn limit to set.
 *
 * Its own sandbox stays off under either isolation, and cannot be turned on:
 * Codex 0.169 sandboxes a command with bubblewrap (the landlock-only fallback
 * panics without it). Under runc, Docker's seccomp profile refuses bwrap its
 * user namespace; under gVisor (runsc 2022), bwrap fails reading
 * /proc/sys/kernel/overflowuid, which gVisor's /proc does not have. Either
 * way every command would fail. The step's container, and under gVisor its
 * own kernel, is the sandbox.
 */
import { jsonLines, num, shQuote, str, withV1, type AgentOutcome, type AgentPreset, type AgentSettings } from './preset.js';
import { messageLines, oneLine, toolResult } from './render.js';

/** A TOML basic string. */
const toml = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

export const codex: AgentPreset = {
  name: 'codex',
  image: 'runner/codex:latest',
  credentials: ['OPENAI_API_KEY'],
  api: (s) => ({ kind: 'openai', upstream: s.baseUrl ?? 'https://api.openai.com/v1', keyEnv: ['OPENAI_API_KEY'] }),
  script(s: AgentSettings, resultPath: string): string {
    const args = ['--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox'];
    if (s.model) args.push('-m', shQuote(s.model));
    for (const off of ['plugins', 'apps', 'in_app_updates']) args.push('-c', `features.${off}=false`);
    // analytics.enabled=false stops its analytics events and its Statsig metrics (ab.chatgpt.com) both
    args.push('-c', 'analytics.enabled=false', '-c', 'check_for_update_on_startup=false');
    if (s.baseUrl) {
      args.push('-c', 'model_provider=runner');
      args.push('-c', shQuote(`model_providers.runner={name="runner",base_url=${toml(withV1(s.baseUrl))},env_key="OPENAI_API_KEY",wire_api="responses"}`));
    }
    // codex exec logs in with CODEX_API_KEY, not OPENAI_API_KEY, on its built-in provider.
    // `-`: the prompt is its stdin, read to its end, and nothing more is waited for or said
    return `printf '%s' "$RUNNER_PROMPT" | CODEX_API_KEY="\${CODEX_API_KEY:-\$OPENAI_API_KEY}" codex exec ${args.join(' ')} - > ${resultPath}`;
  },
  env(): Record<string, string> {
    return {};
  },
  renderEvent(e: Record<string, any>): string[] {
    const item = (e.item ?? {}) as Record<string, any>;
    if (e.type === 'thread.started') return ['codex: started'];
    if (e.type === 'item.started' && item.type === 'command_execution') return [`codex: ran: ${oneLine(item.command)}`];
    if (e.type === 'item.completed') {
      if (item.type === 'agent_message') return messageLines('codex: ', item.text);
      if (item.type === 'command_execution') return [toolResult(item.aggregated_output, typeof item.exit_code === 'number' && item.exit_code !== 0, num(item.exit_code))];
      if (item.type === 'file_change') return (Array.isArray(item.changes) ? item.changes : []).map((c: Record<string, any>) => `codex: ${c.kind === 'add' ? 'wrote' : c.kind === 'delete' ? 'deleted' : 'edited'} ${oneLine(c.path)}`);
      if (item.type === 'mcp_tool_call') return [`codex: called ${oneLine(item.server, 60)}/${oneLine(item.tool, 60)}`];
      if (item.type === 'web_search') return [`codex: searched the web for ${oneLine(item.query)}`];
      if (item.type === 'error') return [`codex: error: ${oneLine(item.message)}`];
    }
    if (e.type === 'turn.completed' && e.usage) return [`codex: turn done (${num(e.usage.input_tokens) ?? 0} tokens in, ${num(e.usage.output_tokens) ?? 0} out)`];
    if (e.type === 'turn.failed' || e.type === 'error') return [`codex: error: ${oneLine(e.error?.message ?? e.message)}`];
    return [];
  },
  parse(text: string, s: AgentSettings): AgentOutcome {
    const events = jsonLines(text);
    if (!events.length) return { error: 'Codex wrote no JSON events' };
    const messages = events.filter((e) => e.type === 'item.completed' && e.item?.type === 'agent_message');
    const turns = events.filter((e) => e.type === 'turn.completed');
    // null where no turn reports the field (not 0)
    const sum = (key: string) => (turns.some((t) => num(t.usage?.[key]) !== null) ? turns.reduce((n, t) => n + (num(t.usage?.[key]) ?? 0), 0) : null);
    const out: AgentOutcome = {
      usage: {
        model: s.model ?? null,
        inputTokens: sum('input_tokens'),
        outputTokens: sum('output_tokens'),
        cacheReadTokens: sum('cached_input_tokens'),
        cacheWriteTokens: sum('cache_write_input_tokens'),
        costUsd: null,
        turns: turns.length || null,
        sessionId: str(events.find((e) => e.type === 'thread.started')?.thread_id),
      },
    };
    const last = messages.at(-1)?.item?.text;
    if (typeof last === 'string') out.result = last;
    const failed = events.find((e) => e.type === 'turn.failed' || e.type === 'error');
    if (failed) out.error = `Codex ended with an error: ${str(failed.error?.message, 500) ?? str(failed.message, 500) ?? 'see its log'}`;
    return out;
  },
};
