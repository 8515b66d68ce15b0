/**
 * The gateway's image must carry this runner's gateway code: its version label
 * is the hash of dist/src/gateway/*.js and of the swarm transfer helper's
 * source beside them (runner-transfer.c, copied there by the build from
 * images/gateway/transfer; images/build.sh computes the same), so a runner
 * never starts a gateway, or a helper, older or newer than itself.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ContainerError } from '../../common/errors.js';
import { packageRoot } from '../../common/package-root.js';
import type { ContainerRuntime } from '../../container/runtime.js';

/** RUNNER_GATEWAY_IMAGE: a gateway image built under another tag (one built from a branch's code, beside the usual one); its version label must match all the same */
export const GATEWAY_IMAGE = process.env.RUNNER_GATEWAY_IMAGE || 'runner/gateway:latest';
const VERSION_LABEL = 'dev.runner.version';
/** the transfer helper's source, in dist/src/gateway (package.json's build copies it there) */
const HELPER_SOURCE = 'runner-transfer.c';

let ours: Promise<string> | undefined;

/** The hash of this runner's gateway code, as images/build.sh labels the image. */
export function gatewayVersion(): Promise<string> {
  return (ours ??= (async () => {
    const dir = path.join(packageRoot(), 'dist/src/gateway');
    // byte order, as `LC_ALL=C sort` in the build script
    const names = (await readdir(dir)).filter((n) => n.endsWith('.js') || n === HELPER_SOURCE).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const hash = createHash('sha256');
    for (const n of names) hash.update(await readFile(path.join(dir, n)));
    return hash.digest('hex').slice(0, 16);
  })());
}

/** Throws what to do when the engine lacks the gateway's image or has another version of it. */
export async function checkGatewayImage(runtime: ContainerRuntime): Promise<void> {
  const labels = await runtime.imageLabels(GATEWAY_IMAGE);
  if (!labels) throw new ContainerError('image_missing', `image ${GATEWAY_IMAGE} is missing, and agent steps and steps with egress: run behind it (and, on --engine swarm, every step starts with its transfer helper): build it with \`make images\``);
  const want = await gatewayVersion();
  if (labels[VERSION_LABEL] !== want) {
    throw new ContainerError('image_stale', `image ${GATEWAY_IMAGE} holds other gateway code than this runner (${labels[VERSION_LABEL] ?? 'no version'}, this runner ${want}): rebuild it with \`make images\``);
  }
}
