/**
 * Who writes a project's caches (safety promise 15: what one run leaves cannot run in the next). A cache is read
 * by every later step of the project, a verify step's install among them, so what is written there must come from
 * code the user trusts as they trust their own project: a step that is not an agent, before any agent step of its
 * run has run (its workspace holds the project's commits and what such steps made of them), in a workspace no
 * earlier run left work in (not a task's worktree after its first run). An agent step, and
 * any step after one (a verify runs the agent's code: its tests, its install scripts), reads the cache through a
 * throw-away layer. The file may trust a step outright with `{ npm: rw }`. Pure.
 */
import type { CachePlan } from '../plan/cache-plan.js';
import type { FlowShape } from '../flow/graph.js';

/**
 * Why the step may not write the caches the file did not mark `rw`, or undefined when it may. `agentBeside`: in a
 * directory steps share, an agent step that may run at the same time (what it writes there, this step may run).
 * `earlierWork`: the workspace holds what earlier runs left (a task's worktree after its first run: its agents'
 * commits, and the files git ignores, such as node_modules), said as the place it is.
 */
export function cacheWriteRefusal(step: { agent: boolean }, agentBefore: string | undefined, agentBeside?: string, earlierWork?: string): string | undefined {
  if (step.agent) return 'an agent step';
  if (agentBefore !== undefined) return `it runs after agent step ${agentBefore}, whose work it may run`;
  if (earlierWork !== undefined) return `it works in ${earlierWork}, which holds what earlier runs left, their agents' work among them`;
  if (agentBeside !== undefined) return `it shares its directory with agent step ${agentBeside}, which may run at the same time`;
  return undefined;
}

/**
 * In a workspace every step works in (a persistent directory), the first agent step that may run at the same time
 * as step `i`: neither needs the other, or it is an agent step that fans out. Pure.
 */
export function agentBeside(shape: FlowShape, agents: readonly boolean[], i: number, fansOut: readonly boolean[]): string | undefined {
  const apart = (j: number) => !shape.ancestors[i]!.has(j) && !shape.ancestors[j]!.has(i);
  const j = shape.ids.findIndex((_, j) => agents[j] && (j === i ? fansOut[j] : apart(j)));
  return j < 0 ? undefined : shape.ids[j];
}

/** The step's caches as it may use them, and the line its log gets for those it reads but may not write. */
export function trustedCaches(caches: readonly CachePlan[], refusal: string | undefined): { caches: CachePlan[]; note?: string } {
  if (refusal === undefined) return { caches: [...caches] };
  const held = caches.filter((c) => !c.readOnly && !c.writeAlways);
  if (!held.length) return { caches: [...caches] };
  const names = held.map((c) => c.name);
  return {
    caches: caches.map((c) => (held.includes(c) ? { ...c, readOnly: true } : c)),
    note:
      `cache ${names.join(', ')}: read, not written (${refusal}): what it writes there is thrown away, so nothing it plants reaches a later step. ` +
      `A cache is written by steps before any agent step of the run, or by one whose file says { ${names[0]}: rw } (docs/pipeline-format.md#caches)`,
  };
}
