/**
 * The project's caches a step names (src/cache/): opened before its container
 * is made (mounted, their settings in its env), closed after (their uses end,
 * one it wrote is pruned back under its bound). Where a step cannot mount the
 * runner's disk (its engine says why), it runs without them, said in its log,
 * and no setting points its tools at a directory that is not there.
 */
import { cachePaths, projectCacheDir } from '../../cache/cache-dirs.js';
import { DEFAULT_PATH, treePart, treeToolDir } from '../../cache/npm-tree/files.js';
import { keepTree } from '../../cache/npm-tree/keep.js';
import { openStepCaches } from '../../cache/step-caches.js';
import { cacheWriteRefusal, trustedCaches } from '../../cache/write-trust.js';
import { errorMessage } from '../../common/errors.js';
import type { StepTransport } from '../../container/runtime.js';
import type { CachePlan } from '../../plan/cache-plan.js';
import { mkdir } from 'node:fs/promises';
import { ownerAlive } from '../owner-lock.js';
import { NOTHING, StepRefused, type AddonStep, type StepAddon } from './addon.js';

export function cachesAddon(transport: Pick<StepTransport, 'noHostMounts'>): StepAddon {
  return {
    name: 'caches',
    open: async (step) => {
      const { c, user } = step;
      if (!c.plan.caches.length) return NOTHING;
      if (transport.noHostMounts) return { notes: [cachesNotUsed(c.plan.caches, transport.noHostMounts)], close: async () => undefined };
      // an agent step, or a step after one, reads the caches and writes a throw-away layer unless the file said rw
      const trust = trustedCaches(c.plan.caches, cacheWriteRefusal({ agent: c.plan.agent !== undefined }, c.agentBefore, c.earlierWork));
      let caches;
      try {
        caches = await openStepCaches({
          home: c.home,
          project: c.ws.project,
          caches: trust.caches,
          runId: c.identity.runId,
          user,
          alive: (runId) => ownerAlive(c.home, runId),
          signal: c.deps.signal,
          now: c.deps.clock,
        });
      } catch (err) {
        throw new StepRefused('cache_failed', `not started: its caches could not be made ready: ${errorMessage(err)}`);
      }
      let tree;
      try {
        tree = await installedTrees(step, trust.caches);
      } catch (err) {
        await caches.close();
        throw new StepRefused('cache_failed', `not started: its installed-tree cache could not be made ready: ${errorMessage(err)}`);
      }
      return {
        mounts: [...caches.mounts, ...(tree?.part.mounts ?? [])],
        // a cache's setting wins over the step's own env: the step asked for the cache
        env: { ...caches.env, ...(tree?.part.env ?? {}) },
        notes: trust.note ? [trust.note, ...caches.notes] : caches.notes,
        // the container is gone: the step's caches are free again, and one it wrote is pruned back under its bound
        close: async () => {
          const lines = await caches.close();
          const kept = tree?.mayKeep ? await tree.keep() : undefined;
          return { logLines: [...lines, ...(kept ? [kept] : [])].map((note) => `runner: ${note}`) };
        },
      };
    },
  };
}

/** The log's line for caches a step cannot mount where it runs (`why`: its engine's reason). Pure. */
export function cachesNotUsed(caches: readonly Pick<CachePlan, 'name'>[], why: string): string {
  return `cache ${caches.map((x) => x.name).join(', ')}: not used ${why}; the step runs without`;
}

/**
 * The npm cache's installed trees (src/cache/npm-tree/): the runner's npm first on the PATH, the project's trees
 * read-only; a step that may write the npm cache has the tree its install made kept after it.
 */
async function installedTrees(step: AddonStep, caches: readonly CachePlan[]) {
  const npm = caches.find((x) => x.name === 'npm');
  if (!npm) return undefined;
  const { c } = step;
  const { dir } = await projectCacheDir(c.home, c.ws.project);
  const trees = cachePaths(dir, 'npm').trees;
  await mkdir(trees, { recursive: true, mode: 0o755 });
  const image = await c.deps.runtime.imageConfig?.(c.plan.image).catch(() => undefined);
  const own = c.plan.env.PATH;
  const basePath = own !== undefined && !own.includes('${{') ? own : (image?.env.PATH ?? DEFAULT_PATH);
  const mayKeep = !npm.readOnly;
  return {
    mayKeep,
    part: treePart({ toolDir: await treeToolDir(c.home), trees, basePath, imageId: image?.id ?? c.plan.image, mayKeep }),
    keep: () => keepTree({ ioDir: step.ioDir, workspace: c.ws.path, persistent: c.ws.kind === 'persistent_directory', trees, runId: c.identity.runId, step: c.unit.name, now: c.deps.clock }),
  };
}
