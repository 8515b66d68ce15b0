/**
 * opencode, headless: `opencode run --format json` with permissions
 * auto-approved (the container is the sandbox), no external plugins, no
 * sharing, and none of its calls home: no update check (registry.npmjs.org),
 * no refresh of its model list (models.opencode.ai: it has one built in), no
 * language-server downloads. Its model is `provider/model` (Anthropic unless
 * said otherwise); base_url goes to that provider's options in the config it
 * reads from OPENCODE_CONFIG_CONTENT.
 */
import { jsonLines, num, shQuote, str, withV1, type AgentOutcome, type AgentPreset, type AgentSettings } from './preset.js';
import { outputOf, toolName, type EventBody, type ToolOutcome } from './events.js';
import { oneLine } from './render.js';

export const OPENCODE_DEFAULT_MODEL = 'anthropic/claude-sonnet-4-5';

export const opencode: AgentPreset = {
  name: 'opencode',
  image: 'runner/opencode:latest',
  credentials: ['ANTHROPIC_API_KEY', 'OPENAI_API_KEY'],
  api(s) {
    // its provider is the model's prefix: the two whose APIs the gateway speaks
    const provider = (s.model ?? OPENCODE_DEFAULT_MODEL).split('/')[0];
    if (provider === 'anthropic') return { kind: 'anthropic', upstream: s.baseUrl ?? 'https://api.anthropic.com', keyEnv: ['ANTHROPIC_API_KEY'] };
    if (provider === 'openai') return { kind: 'openai', upstream: s.baseUrl ?? 'https://api.openai.com/v1', keyEnv: ['OPENAI_API_KEY'] };
    return undefined;
  },
  script(s: AgentSettings, resultPath: string): string {
    // At start it installs @opencode-ai/plugin into its global config directory from the npm registry, in the background,
    // with no setting to stop it; it skips a directory it cannot write to, and needs nothing written there in a run.
    // (A home it cannot write to, under read_only: it fails on its own, and says why.)
    const noInstall = 'mkdir -p "$HOME/.config/opencode" 2>/dev/null && chmod a-w "$HOME/.config/opencode" || true';
    return `${noInstall}\nopencode run --format json --auto --pure -m ${shQuote(s.model ?? OPENCODE_DEFAULT_MODEL)} -- "$RUNNER_PROMPT" < /dev/null > ${resultPath}`;
  },
  env(s: AgentSettings): Record<string, string> {
    const provider = (s.model ?? OPENCODE_DEFAULT_MODEL).split('/')[0]!;
    const config = {
      autoupdate: false,
      share: 'disabled',
      ...(s.baseUrl ? { provider: { [provider]: { options: { baseURL: withV1(s.baseUrl) } } } } : {}),
    };
    return {
      OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
      // the update check reads the global config only, not OPENCODE_CONFIG_CONTENT's autoupdate
      OPENCODE_DISABLE_AUTOUPDATE: '1',
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    };
  },
  events(e: Record<string, any>): EventBody[] {
    const part = (e.part ?? {}) as Record<string, any>;
    if (e.type === 'text' && typeof part.text === 'string' && part.text.trim()) return [{ kind: 'message', text: part.text }];
    // a tool's call and its result come in one event, once it ended
    if (e.type === 'tool_use') {
      const state = (part.state ?? {}) as Record<string, any>;
      const id = typeof part.callID === 'string' ? { id: part.callID.slice(0, 100) } : {};
      const tool = toolName(part.tool);
      const call: EventBody = { kind: 'tool_call', ...id, tool, input: state.input && typeof state.input === 'object' ? state.input : {} };
      if (state.status !== 'completed' && state.status !== 'error') return [call];
      const output = typeof state.output === 'string' ? state.output : typeof state.error === 'string' ? state.error : '';
      const exit = num(state.metadata?.exit);
      // its shell stops a command at its timeout and says so in the output, with no exit code
      const limit = /terminated command after exceeding timeout (\d+) ?ms/.exec(output);
      const outcome: ToolOutcome = limit ? 'timed_out' : 'done';
      return [
        call,
        { kind: 'tool_result', ...id, tool, ok: state.status === 'completed' && (exit === null || exit === 0) && !limit, outcome, ...(exit !== null ? { exitCode: exit } : {}), ...(limit ? { timeoutMs: Number(limit[1]) } : {}), ...outputOf(output) },
      ];
    }
    if (e.type === 'step_finish') {
      const tokens = { ...(num(part.tokens?.input) !== null ? { inputTokens: num(part.tokens.input)! } : {}), ...(num(part.tokens?.output) !== null ? { outputTokens: num(part.tokens.output)! } : {}), ...(num(part.cost) !== null ? { costUsd: num(part.cost)! } : {}) };
      // a step that ends in tool calls goes on; any other reason (stop, length) ends the run
      return part.reason === 'tool-calls' ? [{ kind: 'usage', ...tokens }] : [{ kind: 'final', ok: true, ...(str(part.reason, 60) ? { reason: str(part.reason, 60)! } : {}), ...tokens }];
    }
    if (e.type === 'error') return [{ kind: 'error', text: oneLine(e.error?.data?.message ?? e.error?.message ?? e.error, 500) }];
    return [];
  },
  parse(text: string, s: AgentSettings): AgentOutcome {
    const events = jsonLines(text);
    if (!events.length) return { error: 'opencode wrote no JSON events' };
    const steps = events.filter((e) => e.type === 'step_finish').map((e) => e.part ?? {});
    const sum = (get: (p: Record<string, any>) => unknown) => (steps.length ? steps.reduce((n, p) => n + (num(get(p)) ?? 0), 0) : null);
    const texts = events.filter((e) => e.type === 'text' && typeof e.part?.text === 'string').map((e) => e.part.text as string);
    const out: AgentOutcome = {
      usage: {
        model: s.model ?? OPENCODE_DEFAULT_MODEL,
        inputTokens: sum((p) => p.tokens?.input),
        outputTokens: sum((p) => p.tokens?.output),
        cacheReadTokens: sum((p) => p.tokens?.cache?.read),
        cacheWriteTokens: sum((p) => p.tokens?.cache?.write),
        costUsd: sum((p) => p.cost),
        turns: steps.length || null,
        sessionId: str(events[0]?.sessionID),
      },
    };
    if (texts.length) out.result = texts.at(-1)!;
    const failed = events.find((e) => e.type === 'error');
    if (failed) out.error = `opencode ended with an error: ${str(failed.error?.data?.message, 500) ?? str(failed.error?.message, 500) ?? 'see its log'}`;
    return out;
  },
};
