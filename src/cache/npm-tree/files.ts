/**
 * What a step with the npm cache gets of the installed-tree cache: the runner's `npm` first on its PATH (a sh
 * wrapper that hands install commands to shim.cjs and every other command straight to the image's npm), the
 * project's kept trees read-only, and the variables the shim reads. The wrapper and the shim are written in the
 * runner home (where the engine sees them) and mounted read-only.
 */
import { chmod, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../../common/atomic-write.js';
import { packageRoot } from '../../common/package-root.js';
import type { Mount } from '../../container/runtime.js';
import { CONTAINER_PATHS } from '../../plan/render.js';

/** where the wrapper and the shim are in a step */
export const TREE_TOOL_DIR = '/run/runner/npm-tree';
export const TREE_BIN_DIR = `${TREE_TOOL_DIR}/bin`;
/** where the project's kept trees are in a step (read-only) */
export const TREES_DIR = '/run/runner/npm-trees';
/** the mark the shim leaves in the step's io directory once npm installed (keep.ts reads it) */
export const MARK_FILE = 'npm-tree.json';
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The `npm` on the step's PATH (in `binDir`): install commands go to the shim, the rest to the image's npm at once. */
export const wrapper = (binDir = TREE_BIN_DIR): string => `#!/bin/sh
# the runner's npm (docs/pipeline-format.md#the-installed-tree-npm): installs may come from the installed-tree cache
case "\${1-}" in
  ci|clean-install|ic|install-clean|isntall-clean|install|i|in|ins|inst|insta|instal|isnt|isnta|isntal|isntall)
    exec node ${TREE_TOOL_DIR}/shim.cjs "$@" ;;
esac
IFS=:
for d in $PATH; do
  # the runner's own, however the PATH spells its directory (a trailing slash, //, a link)
  [ "$d/npm" -ef ${binDir}/npm ] && continue
  [ -n "$d" ] && [ -x "$d/npm" ] && exec "$d/npm" "$@"
done
echo "npm: not found on the PATH after the runner's own" >&2
exit 127
`;
export const WRAPPER = wrapper();

/** Writes the wrapper and the shim under `<home>/npm-tree` when they are not there as they should be; returns the directory. */
export async function treeToolDir(home: string): Promise<string> {
  const dir = path.join(home, 'npm-tree');
  await mkdir(path.join(dir, 'bin'), { recursive: true, mode: 0o755 });
  const shim = await readFile(path.join(packageRoot(), 'dist/src/cache/npm-tree/shim.cjs'), 'utf8');
  for (const [file, text] of [[path.join(dir, 'bin', 'npm'), WRAPPER], [path.join(dir, 'shim.cjs'), shim]] as const) {
    const now = await readFile(file, 'utf8').catch(() => undefined);
    if (now !== text) await writeFileAtomic(file, text);
    await chmod(file, 0o755);
  }
  await chmod(dir, 0o755);
  await chmod(path.join(dir, 'bin'), 0o755);
  return dir;
}

/** The step's part: the wrapper and the trees mounted, the wrapper first on the PATH, where the shim finds what it needs. Pure. */
export function treePart(o: { toolDir: string; trees: string; basePath: string; imageId: string; mayKeep: boolean }): { mounts: Mount[]; env: Record<string, string> } {
  return {
    mounts: [
      { source: o.toolDir, target: TREE_TOOL_DIR, readOnly: true },
      { source: o.trees, target: TREES_DIR, readOnly: true },
    ],
    env: {
      PATH: `${TREE_BIN_DIR}:${o.basePath}`,
      RUNNER_NPM_TREE_BIN: TREE_BIN_DIR,
      RUNNER_NPM_TREES: TREES_DIR,
      RUNNER_NPM_TREE_IMAGE: o.imageId,
      // only a step whose tree the runner may keep leaves a mark
      ...(o.mayKeep ? { RUNNER_NPM_TREE_MARK: `${CONTAINER_PATHS.io}/${MARK_FILE}` } : {}),
    },
  };
}
