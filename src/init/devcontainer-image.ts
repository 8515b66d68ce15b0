/**
 * Whether this runner's pipeline schema takes `image: devcontainer` (the
 * project's own dev container as the steps' image): init proposes it only
 * then. Any image name validates, so validating is no answer: the schema says
 * it by exporting DEVCONTAINER_IMAGE = 'devcontainer'. The dev container work
 * (src/container/devcontainer/config.ts) defines that constant; once it is in,
 * one line in schema.ts re-exports it
 * (`export { DEVCONTAINER_IMAGE } from '../container/devcontainer/config.js'`)
 * and init proposes the image. Until then the starter says that a dev
 * container was found (Detected.devcontainer) and keeps the runner's images.
 */
import * as schema from '../pipeline/schema.js';

export function schemaTakesDevcontainer(): boolean {
  return Reflect.get(schema, 'DEVCONTAINER_IMAGE') === 'devcontainer';
}
