/**
 * The transfer helper's bytes (images/gateway/transfer/runner-transfer.c, a
 * static program), as a swarm step's container gets them: a swarm config.
 * They come from the gateway image on the manager (the swarm needs that image
 * there for its relays anyway), read once per image ID: a container made
 * from the image and never started, the file copied out, the container gone.
 */
import type Docker from 'dockerode';
import tarStream from 'tar-stream';
import { Readable } from 'node:stream';
import { ContainerError, errorMessage } from '../../common/errors.js';

/** Where the gateway image holds the helper (images/gateway/Dockerfile). */
export const HELPER_IN_IMAGE = '/usr/local/lib/runner/runner-transfer';
/** A swarm config's limit is 500 KB: the helper must fit, with room. */
const MAX_HELPER_BYTES = 480 * 1024;

const byImageId = new Map<string, Promise<Buffer>>();

/** The helper from `image` (the gateway's) on the engine at `api` (the swarm manager), once `check` said the image is this runner's. */
export async function transferHelper(api: Docker, image: string, check: () => Promise<void>): Promise<Buffer> {
  await check();
  const id = (await api.getImage(image).inspect()).Id;
  let bytes = byImageId.get(id);
  if (!bytes) {
    bytes = readHelper(api, id, image);
    byImageId.set(id, bytes);
    // a failure is not kept: the next step asks again
    bytes.catch(() => byImageId.delete(id));
  }
  return bytes;
}

async function readHelper(api: Docker, id: string, image: string): Promise<Buffer> {
  let c: Docker.Container | undefined;
  try {
    c = await api.createContainer({ Image: id, Entrypoint: ['/nonexistent'], Cmd: [], Labels: { 'dev.runner.role': 'transfer-helper' }, NetworkDisabled: true });
    const archive = (await c.getArchive({ path: HELPER_IN_IMAGE })) as unknown as NodeJS.ReadableStream;
    return await onlyFile(Readable.from(archive as AsyncIterable<Buffer>));
  } catch (err) {
    throw new ContainerError('image_stale', `image ${image} has no transfer helper at ${HELPER_IN_IMAGE}, which steps on --engine swarm start with (${errorMessage(err).split('\n')[0]}): rebuild it with \`make images\``, { cause: err });
  } finally {
    await c?.remove({ force: true }).catch(() => undefined);
  }
}

/** The one regular file a `docker cp` archive of a file holds. */
function onlyFile(src: Readable): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const extract = tarStream.extract();
    let found: Buffer | undefined;
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      let n = 0;
      stream.on('data', (b: unknown) => {
        n += (b as Buffer).length;
        if (n <= MAX_HELPER_BYTES) chunks.push(b as Buffer);
      });
      stream.on('end', () => {
        if (header.type === 'file') {
          if (n > MAX_HELPER_BYTES) return reject(new Error(`the helper is ${n} bytes, more than a swarm config holds`));
          found = Buffer.concat(chunks);
        }
        next();
      });
      stream.on('error', reject);
    });
    extract.on('finish', () => (found ? resolve(found) : reject(new Error('the archive holds no file'))));
    extract.on('error', reject);
    src.on('error', reject);
    src.pipe(extract);
  });
}
