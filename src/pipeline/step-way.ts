/**
 * Which level of the file decides a step's way out (`network:` or `egress:`),
 * its credentials and its `inspect:`: the nearest of step, agent and
 * `defaults` that says it, each key on its own (a step's `egress:` does not
 * drop the credentials its agent names). `defaults: { network: … }` is for
 * plain steps: an agent preset keeps its gateway unless its step or agent
 * says otherwise. Shared by the rules (load) and the plan. Pure.
 */
import type { EgressEntry } from './credentials.js';
import type { DocPath } from './positions.js';

/** What one level (defaults, an agent, a step) may say about the way out. */
export interface WayLevel {
  network?: string | undefined;
  egress?: EgressEntry[] | undefined;
  credentials?: string[] | undefined;
  inspect?: 'all' | 'rules' | undefined;
}

export type Way = { network: string } | { egress: EgressEntry[] };

/** A level's say on the way out (validate refuses both at one level). */
export function wayOf(level: WayLevel): Way | undefined {
  if (level.network !== undefined) return { network: level.network };
  if (level.egress !== undefined) return { egress: level.egress };
  return undefined;
}

export interface Levels {
  defaults: WayLevel;
  agent: WayLevel;
  step: WayLevel;
  /** the step's agent has a preset (it keeps its gateway over defaults' network:) */
  preset: boolean;
  /** where each level is in the file, for messages */
  at: { defaults: DocPath; agent: DocPath | undefined; step: DocPath };
}

/** The step's way out and the level it comes from (undefined: none says, so the built-in default). */
export function stepWay(l: Levels): { way: Way; at: DocPath } | undefined {
  const fallback = wayOf(l.defaults);
  const own = wayOf(l.step);
  if (own) return { way: own, at: l.at.step };
  const agent = wayOf(l.agent);
  if (agent && l.at.agent) return { way: agent, at: l.at.agent };
  if (fallback && !(l.preset && 'network' in fallback)) return { way: fallback, at: l.at.defaults };
  return undefined;
}

/** The nearest level's value of a key, and where it was said. */
export function nearest<K extends 'credentials' | 'inspect'>(l: Levels, key: K): { value: NonNullable<WayLevel[K]>; at: DocPath } | undefined {
  for (const [level, at] of [
    [l.step, l.at.step],
    [l.agent, l.at.agent],
    [l.defaults, l.at.defaults],
  ] as const) {
    const v = level[key];
    if (v !== undefined && at) return { value: v as NonNullable<WayLevel[K]>, at };
  }
  return undefined;
}
