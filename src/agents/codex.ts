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
import { outputOf, type EventBody } from './events.js';
import { oneLine } from './render.js';

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
  events(e: Record<string, any>): EventBody[] {
    const item = (e.item ?? {}) as Record<string, any>;
    const id = typeof item.id === 'string' ? { id: item.id.slice(0, 100) } : {};
    if (e.type === 'thread.started') return [{ kind: 'start', ...(str(e.thread_id) ? { session: str(e.thread_id)! } : {}) }];
    // a command is an item: started when it starts, completed when it ends (however long it ran on in its session)
    if (e.type === 'item.started' && item.type === 'command_execution') return [{ kind: 'tool_call', ...id, tool: 'shell', input: { command: unwrapShell(item.command) } }];
    if (e.type === 'item.completed') {
      if (item.type === 'agent_message' && typeof item.text === 'string' && item.text.trim()) return [{ kind: 'message', text: item.text }];
      if (item.type === 'command_execution') {
        const exit = num(item.exit_code);
        return [{ kind: 'tool_result', ...id, tool: 'shell', ok: item.status === 'completed' && (exit === null || exit === 0), outcome: 'done', ...(exit !== null ? { exitCode: exit } : {}), ...outputOf(typeof item.aggregated_output === 'string' ? item.aggregated_output : '') }];
      }
      if (item.type === 'file_change') {
        const changes = (Array.isArray(item.changes) ? item.changes : []).filter((c: any) => typeof c?.path === 'string').map((c: Record<string, any>) => ({ path: String(c.path), change: c.kind === 'add' ? ('added' as const) : c.kind === 'delete' ? ('deleted' as const) : ('edited' as const) }));
        return [{ kind: 'files', changes }];
      }
      if (item.type === 'mcp_tool_call') {
        const call: EventBody = { kind: 'tool_call', ...id, tool: `${oneLine(item.server, 60)}/${oneLine(item.tool, 60)}`, input: item.arguments && typeof item.arguments === 'object' ? item.arguments : {} };
        const error = typeof item.error?.message === 'string' ? item.error.message : '';
        return [call, { kind: 'tool_result', ...id, ok: item.status === 'completed', outcome: 'done', ...outputOf(error) }];
      }
      if (item.type === 'web_search') return [{ kind: 'tool_call', ...id, tool: 'websearch', input: { query: item.query } }];
      // an error item is a warning: Codex goes on (a failure ends the turn: turn.failed)
      if (item.type === 'error') return [{ kind: 'notice', text: oneLine(item.message, 500) }];
    }
    if (e.type === 'turn.completed') {
      return [{ kind: 'final', ok: true, ...(num(e.usage?.input_tokens) !== null ? { inputTokens: num(e.usage.input_tokens)! } : {}), ...(num(e.usage?.output_tokens) !== null ? { outputTokens: num(e.usage.output_tokens)! } : {}) }];
    }
    if (e.type === 'turn.failed') return [{ kind: 'final', ok: false, reason: oneLine(e.error?.message ?? 'failed', 200) }];
    if (e.type === 'error') {
      const text = oneLine(e.error?.message ?? e.message, 500);
      return [/^Reconnecting\b/i.test(text) ? { kind: 'retry', text } : { kind: 'error', text }];
    }
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

/** The command the agent gave, not Codex's shell around it (`/usr/bin/bash -lc '...'`). */
export function unwrapShell(command: unknown): string {
  const c = typeof command === 'string' ? command : Array.isArray(command) ? command.join(' ') : '';
  const m = /^\S*\/?(?:ba|z)?sh -l?c '((?:[^']|'\\'')*)'$/.exec(c);
  if (m) return m[1]!.replace(/'\\''/g, "'");
  const d = /^\S*\/?(?:ba|z)?sh -l?c "((?:[^"\\]|\\.)*)"$/.exec(c);
  return d ? d[1]!.replace(/\\(["\\$`])/g, '$1') : c;
}
