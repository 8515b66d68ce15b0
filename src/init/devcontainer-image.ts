/**
 * Whether this runner's pipeline schema takes `image: devcontainer` (the
 * project's own dev container as the steps' image): init proposes it only
 * then. Today any image name validates, so validating is no answer: the
 * schema says it by exporting DEVCONTAINER_IMAGE = 'devcontainer' (the work of
 * src/container/devcontainer/). Until it does, the starter says that a dev
 * container was found (Detected.devcontainer) and keeps the runner's images.
 */
import * as schema from '../pipeline/schema.js';

export function schemaTakesDevcontainer(): boolean {
  return Reflect.get(schema, 'DEVCONTAINER_IMAGE') === 'devcontainer';
}
