/** Facts about the project a pipeline names: where it is, its repository, its owner. */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { WorkspaceError } from '../common/errors.js';
import type { Git } from '../git/git.js';

export interface ProjectFacts {
  /** the repository's top level, absolute and resolved */
  root: string;
  /** the common git directory (`.git` of the main checkout), absolute */
  commonDir: string;
  uid: number;
  gid: number;
}

/**
 * Why a project path is missing, and what to do. In the runner's own container
 * (docker compose; its image sets RUNNER_IN_IMAGE) a path that exists on the
 * host is not seen unless mounted.
 */
export function missingProject(dir: string, fix: string, inContainer = process.env.RUNNER_IN_IMAGE === '1'): WorkspaceError {
  if (inContainer) {
    return new WorkspaceError(
      'project_missing',
      `project path ${dir} is not visible inside the runner's container (runner serve runs in Docker; if it exists on the host, it is not mounted): put the project under ` +
        `RUNNER_PROJECTS, which is mounted at the same path, and point project.path there, or mount its folder at the same path in docker-compose.yml`,
    );
  }
  return new WorkspaceError('project_missing', `project path ${dir} does not exist: ${fix}`);
}

/** uid and gid of the project directory; an error that says what is wrong when it is missing. */
export async function projectOwner(dir: string): Promise<{ uid: number; gid: number }> {
  let st;
  try {
    st = await stat(dir);
  } catch {
    throw missingProject(dir, 'fix project.path in the pipeline file');
  }
  if (!st.isDirectory()) {
    throw new WorkspaceError('project_not_dir', `project path ${dir} is not a directory: fix project.path in the pipeline file`);
  }
  return { uid: st.uid, gid: st.gid };
}

export async function inspectProject(makeGit: (o: { uid: number; gid: number }) => Git, dir: string): Promise<ProjectFacts> {
  const owner = await projectOwner(dir);
  const git = makeGit(owner);
  const top = await git.run(['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-common-dir'], {
    cwd: dir,
    allowFail: true,
  });
  if (top.code !== 0) {
    throw new WorkspaceError(
      'not_a_repository',
      `project path ${dir} is not a git repository (${top.stderr.trim()}): run \`git init\` there, or point project.path at a repository`,
    );
  }
  const [root, commonDir] = top.stdout.trim().split('\n');
  return { root: path.resolve(root!), commonDir: path.resolve(commonDir!), ...owner };
}
