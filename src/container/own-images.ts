/**
 * The runner's own images (`runner/*` on Docker Hub's namespace) are built on
 * this machine from the runner's recipes, never pulled: anyone may own the
 * name `runner/...` on a registry, and whoever did would supply the image that
 * gets the worktree and the step's model calls. This is the one place that
 * says which images those are and what builds them. Pure.
 */

/** The images the runner's recipes build, and the make target that builds each (in the runner's directory). */
export const OWN_IMAGE_TARGETS: Readonly<Record<string, string>> = {
  'runner/base': 'make images',
  'runner/toolchain': 'make images',
  'runner/gateway': 'make images',
  'runner/claude-code': 'make images',
  'runner/codex': 'make images',
  'runner/opencode': 'make images',
  'runner/runner': 'make runner-image',
};

/**
 * The repository an image reference names, as the engine normalizes it:
 * `runner/base:latest`, `docker.io/runner/base` and `index.docker.io/runner/base@sha256:…`
 * are all `docker.io/runner/base`; `alpine` is `docker.io/library/alpine`.
 */
export function normalizedRepository(ref: string): string {
  const name = ref.split('@')[0]!;
  const slash = name.indexOf('/');
  const first = slash === -1 ? '' : name.slice(0, slash);
  const hasDomain = slash !== -1 && (/[.:]/.test(first) || first === 'localhost' || first !== first.toLowerCase());
  let domain = hasDomain ? first : 'docker.io';
  let rest = hasDomain ? name.slice(slash + 1) : name;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) rest = rest.slice(0, colon);
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && !rest.includes('/')) rest = `library/${rest}`;
  return `${domain}/${rest}`;
}

/** Whether the engine would look for this image under the runner's own name (and so must never pull it). */
export function isOwnImage(ref: string): boolean {
  return normalizedRepository(ref).startsWith('docker.io/runner/');
}

/**
 * What to tell the user when one of the runner's own images is missing: that
 * it is not pulled, and the exact command that builds it (`dir`: the runner's
 * directory, where its Makefile is; undefined when the recipes are not on this
 * machine, e.g. a runner in its own image).
 */
export function ownImageMissing(ref: string, dir: string | undefined): string {
  const repo = normalizedRepository(ref).slice('docker.io/'.length);
  const target = OWN_IMAGE_TARGETS[repo];
  const where = dir ? `in ${dir}` : "in the runner's source directory, on the machine whose engine this is";
  const never = `the runner's own images (runner/*) are built from its recipes and never pulled from a registry, where anyone may own the name`;
  if (target) return `image ${ref} is missing: ${never}: build it with \`${target}\` ${where}`;
  const made = Object.keys(OWN_IMAGE_TARGETS).filter((r) => OWN_IMAGE_TARGETS[r] === 'make images');
  return `image ${ref} is missing, and no recipe of this runner builds it: ${never}. \`make images\` ${where} builds ${made.join(', ')}; use one of those, or give your own image a name outside runner/`;
}
