/**
 * What a preset knows about one agent CLI, so that `use: claude-code` runs it
 * unattended, in its image, pointed at its model, and reports what it cost.
 * Pure: the planner asks it for a step's image, script, environment and
 * network; after the step, it reads the CLI's machine-readable result.
 */
import type { EventBody } from './events.js';

export const AGENT_RESULT_FILE = 'agent-result.json';

export interface AgentSettings {
  model?: string | undefined;
  maxTurns?: number | undefined;
  baseUrl?: string | undefined;
}

export interface AgentUsage {
  model: string | null;
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  costUsd: number | null;
  turns: number | null;
  sessionId: string | null;
  /** model calls the gateway metered (absent: the CLI's own report) */
  calls?: number;
  /** some call's model is not in the price table: costUsd leaves it out */
  unpriced?: boolean;
}

export interface AgentOutcome {
  /** the agent's final message */
  result?: string;
  usage?: AgentUsage;
  /** the CLI said the run went wrong (max turns, an API error), in its words */
  error?: string;
}

/** The model API a CLI calls, so the gateway can stand in for it. */
export interface ModelApi {
  kind: 'anthropic' | 'openai';
  /** the API's root: the provider's, or the agent's base_url */
  upstream: string;
  /** the variables the CLI reads its credential from, preferred first */
  keyEnv: string[];
}

export interface AgentPreset {
  name: string;
  image: string;
  /** the credentials it accepts, any one of them, from the pipeline's secrets */
  credentials: string[];
  /** the model API it calls with these settings; undefined when the gateway does not know it (validate says so) */
  api(s: AgentSettings): ModelApi | undefined;
  /**
   * The step's script for `sh -e -c`: the prompt arrives as $RUNNER_PROMPT (never
   * through the shell's parser), the machine-readable result goes to `resultPath`.
   */
  script(s: AgentSettings, resultPath: string): string;
  /** what keeps it from calling home (telemetry, updates) and points it at its model */
  env(s: AgentSettings): Record<string, string>;
  /** reads what the CLI wrote to the result file */
  parse(text: string, s: AgentSettings): AgentOutcome;
  /**
   * One line of the CLI's stream (its result file, as it is written), parsed, as events of the one
   * shape (events.ts); none for what says nothing. Pure, one line at a time: `EventReader` puts them together.
   */
  events(line: Record<string, any>): EventBody[];
  /** why a setting cannot work with this CLI, for validation */
  refuse?(step: { user: string | undefined }): string | undefined;
}

/** The JSON objects of a JSON-lines output; lines that are not JSON (a warning) are not the CLI's events. */
export function jsonLines(text: string): Array<Record<string, any>> {
  const out: Array<Record<string, any>> = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const v = JSON.parse(line) as unknown;
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) out.push(v as Record<string, any>);
    } catch {
      // not an event
    }
  }
  return out;
}

/** A count or an amount the CLI reported, or null: never negative, never absurd (a hostile output cannot send metrics backwards). */
export function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v < 1e15 ? v : null;
}

/** A short string the CLI reported (a session id, a model name), or null. */
export function str(v: unknown, max = 200): string | null {
  return typeof v === 'string' && v.length > 0 ? v.slice(0, max) : null;
}

/** An API root without the version path (SDKs that add /v1 themselves take it so). */
export function withoutV1(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v1$/, '');
}

/** An API root as OpenAI-style SDKs take it: with its /v1 (base_url may be given with or without). */
export function withV1(url: string): string {
  const u = url.replace(/\/+$/, '');
  return /\/v1$/.test(u) ? u : `${u}/v1`;
}

/** Quoted for sh: one word whatever it holds. */
export function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
