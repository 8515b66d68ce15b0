/**
 * Who writes a project's caches (safety promise 15: what one run leaves cannot run in the next). A cache is read
 * by every later step of the project, a verify step's install among them, so what is written there must come from
 * code the user trusts as they trust their own project: a step that is not an agent, before any agent step of its
 * run has run (its workspace holds the project's commits and what such steps made of them), in a workspace no
 * earlier run left work in (not a task's worktree after its first run, never a persistent directory). An agent step, and
 * any step after one (a verify runs the agent's code: its tests, its install scripts), reads the cache through a
 * throw-away layer. The file may trust a step outright with `{ npm: rw }`. Pure.
 */
import type { CachePlan } from '../plan/cache-plan.js';

/**
 * Why the step may not write the caches the file did not mark `rw`, or undefined when it may. `earlierWork`: the
 * workspace holds what earlier runs left (a task's worktree after its first run: its agents' commits, and the files
 * git ignores, such as node_modules; a persistent directory, always: what its runs' agents left, and what a step
 * beside an agent is handed while it runs), said as the place it is.
 */
export function cacheWriteRefusal(step: { agent: boolean }, agentBefore: string | undefined, earlierWork?: string): string | undefined {
  if (step.agent) return 'an agent step';
  if (agentBefore !== undefined) return `it runs after agent step ${agentBefore}, whose work it may run`;
  if (earlierWork !== undefined) return `it works in ${earlierWork}, which holds what earlier runs left, their agents' work among them`;
  return undefined;
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
