/**
 * An agent's events in one shape, whichever CLI ran: each preset turns a line
 * of its CLI's stream into these (`AgentPreset.events`, pure, one line at a
 * time), `EventReader` puts the lines of one run together (a result learns its
 * tool from its call, events after the work are marked as a wrap-up), and one
 * renderer (render.ts) turns them into log lines. The console, `runner logs`,
 * the dashboard, `runner logs --transcript --json` and MCP's `step_transcript`
 * all give this shape. Pure.
 *
 * The work and the wrap-up: the work is the conversation the step's prompt
 * started (Claude Code's first `init` to its first `result`, Codex's thread,
 * opencode's session). A wrap-up is a conversation the CLI starts of itself
 * once the work has ended: a `start` after a `final`. Claude Code does this
 * in `-p` mode when a command it ran in the background (asked to, or moved
 * there at its 120 s limit) ends after its answer: it prints the task's end
 * (`task_notification`), a new `init`, answers the notification in a turn of
 * its own ("Done." from a model with nothing left to say) and a second
 * `result`. Codex (`exec`) and opencode (`run`) start none. A wrap-up's
 * events are kept and shown, marked `wrapUp: true`; its messages and its
 * answer are never the step's summary. (The background command's end itself
 * comes before the new `init`: it is the work's, not the wrap-up's.)
 */

/** What a command's output shows of itself: its last lines, each cut, in all at most this much. */
export const TAIL_LINES = 20;
export const TAIL_LINE_CHARS = 300;

export type ToolOutcome =
  /** the command ran to its end (ok or not: its exit code says) */
  | 'done'
  /** the CLI stopped it at its time limit */
  | 'timed_out'
  /** the CLI runs it on in the background: its end comes later, as a `task_end` */
  | 'backgrounded';

export type AgentEvent = { agent: string; wrapUp?: true } & (
  | { kind: 'start'; model?: string; session?: string }
  /** a message of the agent's (text it wrote for the person reading) */
  | { kind: 'message'; text: string }
  /** a tool the agent called: a command (`tool: 'shell'`, `input.command`), a file read or written, anything else by its name */
  | { kind: 'tool_call'; id?: string; tool: string; input: Record<string, unknown> }
  | {
      kind: 'tool_result';
      id?: string;
      /** the tool of the call it answers, when the reader knows it */
      tool?: string;
      ok: boolean;
      outcome: ToolOutcome;
      exitCode?: number;
      /** a timed-out or backgrounded command: the limit it hit, in ms */
      timeoutMs?: number;
      /** a backgrounded command: the CLI's id for it, which its task_end names */
      task?: string;
      /** the output's size, all of it */
      lines: number;
      bytes: number;
      /** its last lines (at most TAIL_LINES, each at most TAIL_LINE_CHARS) */
      tail: string[];
    }
  /** a command the CLI ran in the background ended */
  | { kind: 'task_end'; task: string; id?: string; ok: boolean; exitCode?: number; text: string }
  /** files the CLI changed itself (Codex's patches) */
  | { kind: 'files'; changes: Array<{ path: string; change: 'added' | 'deleted' | 'edited' }> }
  /** tokens spent on one model call or step, as the CLI reports them (the gateway's own count is what is recorded) */
  | { kind: 'usage'; inputTokens?: number; outputTokens?: number; costUsd?: number }
  /** the CLI says a conversation ended: ok or not, why, its answer (Claude Code's `result`), its turns and tokens */
  | { kind: 'final'; ok: boolean; reason?: string; result?: string; turns?: number; inputTokens?: number; outputTokens?: number; costUsd?: number }
  /** the model API failed and the CLI asks again */
  | { kind: 'retry'; text: string }
  /** the CLI warns and goes on */
  | { kind: 'notice'; text: string }
  | { kind: 'error'; text: string }
);

/** The event without the fields every event has: what a preset's parser builds. */
export type EventBody = AgentEvent extends infer E ? (E extends AgentEvent ? Omit<E, 'agent' | 'wrapUp'> : never) : never;

/** A command's output as an event carries it: its size and its tail. */
export function outputOf(text: string): { lines: number; bytes: number; tail: string[] } {
  const all = text.replace(/\r\n/g, '\n').split('\n');
  while (all.length && !all.at(-1)!.trim()) all.pop();
  const tail = all.slice(-TAIL_LINES).map((l) => (l.length > TAIL_LINE_CHARS ? `${l.slice(0, TAIL_LINE_CHARS - 1)}…` : l));
  return { lines: all.filter((l) => l.trim()).length, bytes: Buffer.byteLength(text), tail };
}

/** A tool's name as one shape says it: every CLI's shell is `shell`. */
export function toolName(name: unknown): string {
  const s = typeof name === 'string' && name ? name.slice(0, 100) : 'tool';
  return /^(bash|shell|exec_command|local_shell)$/i.test(s) ? 'shell' : s;
}

/**
 * The events of one run of a CLI, line by line: a tool result learns the tool
 * of its call, and from a `start` that follows a `final` on, a wrap-up.
 */
export class EventReader {
  private readonly tools = new Map<string, string>();
  private ended = false;
  private wrapUp = false;

  constructor(
    readonly agent: string,
    private readonly parse: (line: Record<string, any>) => EventBody[],
  ) {}

  /** A line of the CLI's stream, as it wrote it; a line that is no JSON object is no event. */
  line(text: string): AgentEvent[] {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      return [];
    }
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? this.event(v as Record<string, any>) : [];
  }

  /** One of the CLI's events, already parsed. */
  event(raw: Record<string, any>): AgentEvent[] {
    let bodies: EventBody[];
    try {
      bodies = this.parse(raw);
    } catch {
      return []; // a line the CLI (or the agent) mangled says nothing
    }
    return bodies.map((b) => {
      if (b.kind === 'start' && this.ended) this.wrapUp = true;
      const e = { agent: this.agent, ...(this.wrapUp ? { wrapUp: true as const } : {}), ...b } as AgentEvent;
      if (e.kind === 'tool_call' && e.id) {
        if (this.tools.size > 10_000) this.tools.clear();
        this.tools.set(e.id, e.tool);
      }
      if (e.kind === 'tool_result' && e.id && !e.tool && this.tools.has(e.id)) e.tool = this.tools.get(e.id)!;
      if (e.kind === 'final') this.ended = true;
      return e;
    });
  }
}

/** All the events of a CLI's stream (its transcript, its result file). */
export function eventsOf(agent: string, parse: (line: Record<string, any>) => EventBody[], text: string): AgentEvent[] {
  const reader = new EventReader(agent, parse);
  return text.split('\n').flatMap((l) => (l.trim() ? reader.line(l) : []));
}

/**
 * The step's summary (its `result`, the subject of its commit): the answer
 * the CLI gave at the end of the work (Claude Code's `result`), else the
 * last message of the work (Codex, opencode). Never a wrap-up's message: the
 * "Done." Claude Code says to a background command's late notification is not
 * what the step did.
 */
export function summaryOf(events: AgentEvent[]): string | undefined {
  const work = events.filter((e) => !e.wrapUp);
  const final = work.filter((e) => e.kind === 'final').at(-1);
  if (final?.kind === 'final' && final.result !== undefined && final.result.trim()) return final.result;
  const last = work.filter((e) => e.kind === 'message').at(-1);
  return last?.kind === 'message' ? last.text : undefined;
}
