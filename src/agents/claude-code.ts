/**
 * Claude Code, headless: `claude -p` with its events streamed as JSON lines
 * (`stream-json`, the last one its result), permissions skipped
 * (the container is the sandbox), no auto-update or telemetry. It refuses to
 * skip permissions as root, so a step running as root is refused at load.
 */
import { jsonLines, num, shQuote, str, withoutV1, type AgentOutcome, type AgentPreset, type AgentSettings } from './preset.js';
import { messageLines, oneLine, toolCall, toolResult } from './render.js';

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
    // its last result event (stream-json), or the one result object (json)
    const events = jsonLines(text);
    const j = events.filter((e) => e.type === 'result').at(-1) ?? (events.length === 1 && events[0]!.type === undefined ? events[0] : undefined);
    if (!j) return { error: 'Claude Code wrote no JSON result' };
    const usage = (j.usage ?? {}) as Record<string, unknown>;
    const models = Object.keys((j.modelUsage ?? {}) as object);
    const out: AgentOutcome = {
      usage: {
        model: str(s.model) ?? str(models[0]),
        inputTokens: num(usage.input_tokens),
        outputTokens: num(usage.output_tokens),
        cacheReadTokens: num(usage.cache_read_input_tokens),
        cacheWriteTokens: num(usage.cache_creation_input_tokens),
        costUsd: num(j.total_cost_usd),
        turns: num(j.num_turns),
        sessionId: str(j.session_id),
      },
    };
    if (typeof j.result === 'string') out.result = j.result;
    if (j.is_error === true || (typeof j.subtype === 'string' && j.subtype !== 'success')) {
      out.error = `Claude Code ended with ${str(j.subtype, 60) ?? 'an error'}${num(j.api_error_status) !== null ? ` (API status ${j.api_error_status})` : ''}`;
    }
    return out;
  },
  renderEvent(e: Record<string, any>): string[] {
    const content = Array.isArray(e.message?.content) ? (e.message.content as Array<Record<string, any>>) : [];
    if (e.type === 'system' && e.subtype === 'init') return [`claude-code: started (${oneLine(e.model, 80) || 'its default model'})`];
    if (e.type === 'assistant') {
      return content.flatMap((c) => (c.type === 'text' ? messageLines('claude-code: ', c.text) : c.type === 'tool_use' ? [`claude-code: ${toolCall(String(c.name ?? 'tool'), c.input)}`] : []));
    }
    if (e.type === 'user') return content.filter((c) => c.type === 'tool_result').map((c) => toolResult(c.content, c.is_error === true));
    if (e.type === 'system' && e.subtype === 'api_retry') return [`claude-code: the model API failed, retrying (${oneLine(e.error ?? e.message, 120)})`];
    if (e.type === 'result') return [`claude-code: finished: ${oneLine(e.subtype, 40)}${typeof e.num_turns === 'number' ? `, ${e.num_turns} turns` : ''}`];
    return [];
  },
  refuse(step: { user: string | undefined }): string | undefined {
    if (step.user === '0' || step.user === '0:0' || step.user?.startsWith('0:')) {
      return 'Claude Code refuses to skip its permission prompts as root, and a step has no one to answer them: drop user: (a step runs as the project\'s owner, or 65532)';
    }
    return undefined;
  },
};
