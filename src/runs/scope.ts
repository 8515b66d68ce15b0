/**
 * A door's scope: the projects whose runs it serves. Every operation on a run
 * checks it (checks.ts), so no door reads, diffs, delivers or cancels a run of
 * a project it was not given, whichever tool or route asks:
 *   - the CLI (`runner runs`, `logs`, `diff`, `merge`, `apply`) serves every
 *     project of its runner home: whoever may read the home may run the CLI on it;
 *   - `runner serve` (its API, its dashboard and its /mcp) serves the projects
 *     of the pipelines in its folder, as they are now, and every project under
 *     its --project folders (where /mcp's agent tasks work);
 *   - `runner mcp` serves the projects of the pipelines under its --pipelines
 *     folders, read when asked, and every project under its --project folders.
 * A project is compared by its real path (every symlink resolved). A run whose
 * record names no project (queued, or never started for want of its pipeline)
 * holds nothing of any project, and is served by every door of its home.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { RunnerError } from '../common/errors.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { isUnder } from './folders.js';

export interface Scope {
  /** true: every project of the home (the CLI) */
  every: boolean;
  /** the projects served one by one (the pipelines' projects), real paths, as they are now */
  projects(): Promise<string[]>;
  /** real paths: every project under one of these is served */
  folders: string[];
  /** what the door serves, in a sentence, for a refusal */
  says: string;
}

/** The CLI's: every project of the home. */
export const EVERY_PROJECT: Scope = { every: true, projects: async () => [], folders: [], says: 'the CLI serves every project of its runner home' };

/** A server's: the projects of its pipelines and those under its project folders. */
export function projectScope(o: { pipelineProjects: () => Promise<string[]>; folders: string[]; says: string }): Scope {
  return { every: false, projects: o.pipelineProjects, folders: o.folders, says: o.says };
}

/** The folder a pipeline works on (its project.path, from the file's folder), as its real path when it exists. */
export async function pipelineProject(loaded: Pick<LoadedPipeline, 'dir' | 'pipeline'>): Promise<string> {
  const p = path.resolve(loaded.dir, loaded.pipeline.project.path);
  return realpath(p).catch(() => p);
}

/**
 * Whether a run of `project` is served, as a function to call for many runs:
 * the scope's projects are read once, each project's real path once.
 */
export async function servedBy(scope: Scope): Promise<(project: string) => Promise<boolean>> {
  if (scope.every) return async () => true;
  const listed = new Set(await scope.projects());
  const reals = new Map<string, Promise<string>>();
  return async (project) => {
    if (!project) return true; // no project on record: nothing of any project in it
    let real = reals.get(project);
    if (!real) reals.set(project, (real = realpath(project).catch(() => path.resolve(project))));
    const r = await real;
    return listed.has(r) || listed.has(path.resolve(project)) || scope.folders.some((f) => isUnder(r, f));
  };
}

/** Refuses a run whose project the door does not serve, saying which project and what the door serves. */
export async function checkServed(scope: Scope, rec: { runId: string; project: string }): Promise<void> {
  if (await (await servedBy(scope))(rec.project)) return;
  throw new RunnerError('outside_scope', `run ${rec.runId} is of the project ${rec.project}, which this server does not serve: ${scope.says}. Read or deliver it with the runner CLI (runner runs show, runner merge) on its home, or start the server for that project`);
}
