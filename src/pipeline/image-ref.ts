/**
 * What an `image:` may be: `devcontainer`, or a Docker image reference as the
 * engine's own grammar has it (distribution/reference): `[HOST[:PORT]/]PATH[:TAG][@DIGEST]`,
 * its path components lowercase. Anything else is refused at load: a name the
 * engine cannot parse is not passed to it, where a URL such as `https://host/x`
 * made the Docker client follow the engine's redirect off this machine.
 */
const DOMAIN_PART = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_PART}(?:\\.${DOMAIN_PART})*|\\[[0-9a-fA-F:]+\\])(?::[0-9]{1,5})?`;
const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const REFERENCE = new RegExp(`^(?:${DOMAIN}/)?${COMPONENT}(?:/${COMPONENT})*(?::${TAG})?(?:@${DIGEST})?$`);

/** The longest reference the engine takes (distribution/reference's NameTotalLengthMax, for the name part). */
const MAX_NAME = 255;

/** Why `image` is no image reference (and not `devcontainer`), or undefined when it is one. Pure. */
export function imageRefProblem(image: string): string | undefined {
  if (image === 'devcontainer') return undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(image)) return `"${image.slice(0, 80)}" is a URL, not an image name: write it as HOST[:PORT]/PATH[:TAG] (no scheme)`;
  const name = image.split('@')[0]!.replace(/:[\w][\w.-]{0,127}$/, '');
  if (name.length > MAX_NAME) return `the image name is ${name.length} characters; the engine takes at most ${MAX_NAME}`;
  if (!REFERENCE.test(image)) {
    return `"${image.slice(0, 80)}" is not an image name: HOST[:PORT]/PATH[:TAG][@sha256:DIGEST], its path in lowercase letters, digits and . _ - (or devcontainer, the project's dev container)`;
  }
  return undefined;
}
