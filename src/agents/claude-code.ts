/**
 * Claude Code, headless: `claude -p` with its events streamed as JSON lines
 * (`stream-json`, the last one its result), permissions skipped
 * (the container is the sandbox), no auto-update or telemetry. It refuses to
 * skip permissions as root, so a step running as root is refused at load.
 */
import { jsonLines, num, shQuote, str, withoutV1, type AgentOutcome, type AgentPreset, type AgentSettings } from './preset.js';
import { outputOf, toolName, type EventBody, type ToolOutcome } from './events.js';
import { oneLine } from './render.js';

export const claudeCode: AgentPreset = {
  name: 'claude-code',
  image: 'runner/claude-code:latest',
  credentials: ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN'],
  api: (s) => ({ kind: 'anthropic', upstream: s.baseUrl ?? 'https://api.anthropic.com', keyEnv: ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN'] }),
  script(s: AgentSettings, resultPath: string): string {
    const flags = ['--output-format', 'stream-json', '--verbose', '--dangerously-skip-permissions'];
    if (s.model) flags.push('--model', shQuote(s.model));
    if (s.maxTurns !== undefined) flags.push('--max-turns', String(s.maxTurns));
    return `claude -p ${flags.join(' ')} -- "$RUNNER_PROMPT" > ${resultPath}`;
  },
  env(s: AgentSettings): Record<string, string> {
    return {
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      // Claude Code adds /v1/messages itself: base_url is taken with or without /v1.
      ...(s.baseUrl ? { ANTHROPIC_BASE_URL: withoutV1(s.baseUrl) } : {}),
    };
  },
  parse(text: string, s: AgentSettings): AgentOutcome {
    // its result events (stream-json: one a conversation, see events.ts on the wrap-up), or the one result object (json)
    const events = jsonLines(text);
    const results = events.filter((e) => e.type === 'result');
    if (!results.length && events.length === 1 && events[0]!.type === undefined) results.push(events[0]!);
    if (!results.length) return { error: 'Claude Code wrote no JSON result' };
    const last = results.at(-1)!;
    // tokens and turns are each conversation's own: summed; total_cost_usd is the session's so far: the last one's
    const sum = (get: (r: Record<string, any>) => unknown) => (results.some((r) => num(get(r)) !== null) ? results.reduce((n, r) => n + (num(get(r)) ?? 0), 0) : null);
    const models = Object.keys((last.modelUsage ?? {}) as object);
    const out: AgentOutcome = {
      usage: {
        model: str(s.model) ?? str(models[0]),
        inputTokens: sum((r) => r.usage?.input_tokens),
        outputTokens: sum((r) => r.usage?.output_tokens),
        cacheReadTokens: sum((r) => r.usage?.cache_read_input_tokens),
        cacheWriteTokens: sum((r) => r.usage?.cache_creation_input_tokens),
        costUsd: num(last.total_cost_usd),
        turns: sum((r) => r.num_turns),
        sessionId: str(last.session_id),
      },
    };
    const first = results[0]!;
    if (typeof first.result === 'string') out.result = first.result;
    const failed = results.find((j) => j.is_error === true || (typeof j.subtype === 'string' && j.subtype !== 'success'));
    if (failed) {
      out.error = `Claude Code ended ${failed === first ? '' : 'its wrap-up '}with ${str(failed.subtype, 60) ?? 'an error'}${num(failed.api_error_status) !== null ? ` (API status ${failed.api_error_status})` : ''}`;
    }
    return out;
  },
  events(e: Record<string, any>): EventBody[] {
    const content = Array.isArray(e.message?.content) ? (e.message.content as Array<Record<string, any>>) : [];
    if (e.type === 'system' && e.subtype === 'init') return [{ kind: 'start', ...(str(e.model) ? { model: str(e.model)! } : {}), ...(str(e.session_id) ? { session: str(e.session_id)! } : {}) }];
    if (e.type === 'system' && e.subtype === 'api_retry') return [{ kind: 'retry', text: oneLine(e.error_status ? `status ${e.error_status}: ${e.error ?? ''}` : (e.error ?? e.message), 200) }];
    // a task's end: of a command in the background (a foreground command's task has no output file: its result follows)
    if (e.type === 'system' && e.subtype === 'task_notification' && typeof e.task_id === 'string' && e.output_file !== '') {
      const exit = /exit code (\d+)/.exec(String(e.summary ?? ''));
      return [{ kind: 'task_end', task: e.task_id.slice(0, 100), ...(typeof e.tool_use_id === 'string' ? { id: e.tool_use_id.slice(0, 100) } : {}), ok: e.status === 'completed', ...(exit ? { exitCode: Number(exit[1]) } : {}), text: oneLine(e.summary ?? e.status, 500) }];
    }
    if (e.type === 'assistant') {
      return content.flatMap((c): EventBody[] =>
        c.type === 'text' && typeof c.text === 'string' && c.text.trim()
          ? [{ kind: 'message', text: c.text }]
          : c.type === 'tool_use'
            ? [{ kind: 'tool_call', ...(typeof c.id === 'string' ? { id: c.id.slice(0, 100) } : {}), tool: toolName(c.name), input: c.input && typeof c.input === 'object' ? (c.input as Record<string, unknown>) : {} }]
            : [],
      );
    }
    if (e.type === 'user') return content.filter((c) => c.type === 'tool_result').map((c) => claudeResult(c, content.length === 1 ? e.tool_use_result : undefined));
    if (e.type === 'result') {
      return [{
        kind: 'final',
        ok: e.is_error !== true && e.subtype === 'success',
        ...(str(e.subtype, 60) ? { reason: str(e.subtype, 60)! } : {}),
        ...(typeof e.result === 'string' ? { result: e.result } : {}),
        ...(num(e.num_turns) !== null ? { turns: num(e.num_turns)! } : {}),
        ...(num(e.usage?.input_tokens) !== null ? { inputTokens: num(e.usage.input_tokens)! } : {}),
        ...(num(e.usage?.output_tokens) !== null ? { outputTokens: num(e.usage.output_tokens)! } : {}),
        ...(num(e.total_cost_usd) !== null ? { costUsd: num(e.total_cost_usd)! } : {}),
      }];
    }
    return [];
  },
  refuse(step: { user: string | undefined }): string | undefined {
    if (step.user === '0' || step.user === '0:0' || step.user?.startsWith('0:')) {
      return 'Claude Code refuses to skip its permission prompts as root, and a step has no one to answer them: drop user: (a step runs as the project\'s owner, or 65532)';
    }
    return undefined;
  },
};

/**
 * A tool result of Claude Code's: its text (what the model saw), and, for a
 * command, what its `tool_use_result` says beside it: the command's output,
 * and whether it went to the background (`backgroundTaskId`; `timedOutAfterMs`
 * when it hit its time limit and was moved there). A command stopped at its
 * limit says so in its text ("Exit code 143 / Command timed out after 1s").
 */
function claudeResult(c: Record<string, any>, meta: unknown): EventBody {
  const text = typeof c.content === 'string' ? c.content : Array.isArray(c.content) ? c.content.map((p: any) => (typeof p?.text === 'string' ? p.text : '')).join('') : '';
  const m = meta && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Record<string, any>) : undefined;
  const exit = /^Exit code (\d+)\n?/.exec(text);
  const timedOut = /^Command timed out after (\d+(?:\.\d+)?)(ms|s|m)\b/m.exec(text);
  let outcome: ToolOutcome = 'done';
  let timeoutMs: number | null = null;
  if (typeof m?.backgroundTaskId === 'string') {
    outcome = 'backgrounded';
    timeoutMs = num(m.timedOutAfterMs);
  } else if (timedOut) {
    outcome = 'timed_out';
    timeoutMs = Number(timedOut[1]) * (timedOut[2] === 'ms' ? 1 : timedOut[2] === 's' ? 1000 : 60_000);
  }
  // a command's own output when Claude Code gives it apart (not its note on the background); else the text the model saw
  const output = m && typeof m.stdout === 'string' ? [m.stdout, typeof m.stderr === 'string' ? m.stderr : ''].filter(Boolean).join('\n') : exit ? text.slice(exit[0].length) : text;
  return {
    kind: 'tool_result',
    ...(typeof c.tool_use_id === 'string' ? { id: c.tool_use_id.slice(0, 100) } : {}),
    ok: c.is_error !== true && outcome !== 'timed_out',
    outcome,
    ...(exit ? { exitCode: Number(exit[1]) } : {}),
    ...(timeoutMs !== null && Number.isFinite(timeoutMs) ? { timeoutMs } : {}),
    ...(outcome === 'backgrounded' ? { task: String(m!.backgroundTaskId).slice(0, 100) } : {}),
    ...outputOf(output),
  };
}
