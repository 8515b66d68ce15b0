/**
 * The runner's own images and a registry, through this machine's engine: push
 * them there (`runner images push`), and find the digest a swarm job names one
 * by (SwarmRuntime). The engine does the talking (https, or plain http for a
 * registry in its insecure-registries; its /etc/docker/certs.d), so the
 * runner trusts a registry exactly as the engine and the nodes do; it is
 * given the credentials the docker client has for the registry (or
 * --registry-auth's), as `docker push` would be. The one place both the CLI
 * and the swarm engine call.
 */
import Docker from 'dockerode';
import { ContainerError, errorMessage } from '../common/errors.js';
import { recipesDir } from './local/docker.js';
import { isOwnImage, ownImageMissing, OWN_IMAGE_TARGETS } from './own-images.js';
import { RegistryCredentials } from './registry-credentials.js';
import { isUnknownManifest, ownRepoTag, pinImage, pushCommand, registryTagRef, registryTrouble, type Pinning } from './registry-names.js';

/** No credentials: the engine is sent an empty auth header, as the docker CLI does for a registry it has none for. */
const NO_AUTH = {};

/** What the engine is sent for `registry`: its credentials, else none (a helper that fails is no reason not to try without). */
async function registryAuth(credentials: RegistryCredentials, registry: string): Promise<Docker.AuthConfig> {
  return (await credentials.authFor(`${registry}/runner/base`)).authconfig ?? NO_AUTH;
}

const firstLine = (s: string) => s.split('\n')[0]!.trim();
const statusOf = (err: unknown): number | undefined => (err as { statusCode?: number })?.statusCode;

export interface PushProgress {
  /** the image as given (runner/base:latest) */
  image: string;
  /** where it goes (HOST:PORT/runner/base:latest) */
  target: string;
  layers: number;
  layersDone: number;
  bytesDone: number;
  /** the sum of the sizes the engine reported so far (layers it has started) */
  bytesKnown: number;
}

export interface Pushed {
  image: string;
  /** this engine's image ID */
  id: string;
  /** the registry references it was pushed as: its tag, and its version when its label names one */
  tags: string[];
  /** the manifest's digest in the registry */
  digest: string;
  /** what a swarm job names it by */
  pinned: string;
}

/** The runner's own images this engine has, each tag (runner/base:latest, …), sorted. */
export async function localOwnImages(docker: Docker = new Docker()): Promise<string[]> {
  const list = await docker.listImages();
  const own = new Set(Object.keys(OWN_IMAGE_TARGETS));
  const tags = list.flatMap((i) => i.RepoTags ?? []).filter((t) => t !== '<none>:<none>' && isOwnImage(t) && own.has(ownRepoTag(t)?.repo ?? ''));
  return [...new Set(tags)].sort();
}

/**
 * Pushes each image (one of the runner's own, by tag) to `registry` under its
 * repository and tag, and under its version too when its `dev.runner.version`
 * label names one (runner/claude-code:2.1.330); tags it here under the
 * registry's name first, as `docker push` needs. Stops at the first failure,
 * with what to do.
 */
export async function pushOwnImages(registry: string, images: readonly string[], onProgress: (p: PushProgress) => void, docker: Docker = new Docker(), credentials = new RegistryCredentials()): Promise<Pushed[]> {
  const done: Pushed[] = [];
  const auth = await registryAuth(credentials, registry);
  for (const image of images) {
    if (!isOwnImage(image)) throw new ContainerError('bad_input', `${image} is not one of the runner's own images (runner/*): push other images with docker push`);
    const rt = ownRepoTag(image);
    if (!rt) throw new ContainerError('bad_input', `${image} names a digest: give the runner's own images by tag (runner/base:latest)`);
    const info = await inspectOwn(docker, image);
    const version = info.Config?.Labels?.['dev.runner.version'];
    const tags = [rt.tag, ...(version && version !== rt.tag && /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(version) ? [version] : [])];
    const repoName = `${registry}/${rt.repo}`;
    let digest: string | undefined;
    for (const tag of tags) {
      const had = await docker.getImage(`${repoName}:${tag}`).inspect().then(() => true, () => false);
      await docker.getImage(image).tag({ repo: repoName, tag });
      try {
        const d = await pushOne(docker, image, repoName, tag, onProgress, registry, auth);
        if (tag === rt.tag) digest = d;
      } catch (err) {
        // a tag made only for a push that failed is not left behind (the image keeps its own names)
        if (!had) await docker.getImage(`${repoName}:${tag}`).remove({ noprune: true }).catch(() => undefined);
        throw err;
      }
    }
    // the engine records the digest with the image it pushed: the run matches the registry's tag against it
    const after = await docker.getImage(image).inspect();
    if (after.Id !== info.Id) throw new ContainerError('image_changed', `${image} changed while it was pushed (${info.Id.slice(0, 19)}, now ${after.Id.slice(0, 19)}): push it again`);
    const pin = pinImage({ image, registry, imageId: after.Id, repoDigests: after.RepoDigests, remote: digest });
    if (!pin.ok) throw new ContainerError('push_failed', `${image} was pushed, but the engine did not record the digest ${digest ?? '(none reported)'} for it: ${pin.message}`);
    done.push({ image, id: info.Id, tags: tags.map((t) => registryTagRef(registry, rt.repo, t)), digest: pin.digest, pinned: pin.ref });
  }
  return done;
}

async function inspectOwn(docker: Docker, image: string): Promise<Docker.ImageInspectInfo> {
  try {
    return await docker.getImage(image).inspect();
  } catch (err) {
    if (statusOf(err) === 404) throw new ContainerError('image_missing', ownImageMissing(image, recipesDir()), { cause: err });
    throw new ContainerError('docker_failed', `inspecting ${image}: ${firstLine(errorMessage(err))}`, { cause: err });
  }
}

/** One `docker push REPO:TAG`; the digest the engine reports at its end. */
async function pushOne(docker: Docker, image: string, repoName: string, tag: string, onProgress: (p: PushProgress) => void, registry: string, auth: Docker.AuthConfig): Promise<string> {
  const target = `${repoName}:${tag}`;
  const failed = (why: string, cause?: unknown): ContainerError =>
    new ContainerError('push_failed', `pushing ${image} to ${target} failed: ${registryTrouble(registry, why) ?? why}`, cause === undefined ? undefined : { cause });
  let stream: NodeJS.ReadableStream;
  try {
    stream = (await docker.getImage(repoName).push({ tag }, undefined as never, auth)) as unknown as NodeJS.ReadableStream;
  } catch (err) {
    throw failed(firstLine(errorMessage(err)), err);
  }
  const layers = new Map<string, { current: number; total: number; done: boolean }>();
  let digest: string | undefined;
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err: Error | null, out: Array<{ error?: string }>) => {
        const why = err?.message ?? out.find((o) => o.error)?.error;
        if (why) reject(failed(firstLine(why), err ?? undefined));
        else resolve();
      },
      (ev: { id?: string; status?: string; progressDetail?: { current?: number; total?: number }; aux?: { Digest?: string } }) => {
        if (ev.aux?.Digest) digest = ev.aux.Digest;
        if (!ev.id || !/^[0-9a-f]{12}$/.test(ev.id)) return;
        const l = layers.get(ev.id) ?? { current: 0, total: 0, done: false };
        if (ev.progressDetail?.total) Object.assign(l, { current: ev.progressDetail.current ?? 0, total: ev.progressDetail.total });
        if (/^(Pushed|Layer already exists|Mounted from)/.test(ev.status ?? '')) Object.assign(l, { done: true, current: l.total });
        layers.set(ev.id, l);
        let bytesDone = 0;
        let bytesKnown = 0;
        for (const x of layers.values()) {
          bytesDone += x.current;
          bytesKnown += x.total;
        }
        onProgress({ image, target, layers: layers.size, layersDone: [...layers.values()].filter((x) => x.done).length, bytesDone, bytesKnown });
      },
    );
  });
  if (!digest) throw failed('the engine reported no digest at the end of the push');
  return digest;
}

/**
 * The reference a swarm job names one of the runner's own images by: the
 * registry's manifest for the image's tag, when this engine recorded that
 * digest for exactly this image (pushed from here, at this version). Throws
 * with the command that pushes it when the registry lacks it or holds another.
 */
export async function pinnedOwnImage(docker: Docker, registry: string, image: string, credentials = new RegistryCredentials()): Promise<string> {
  const info = await inspectOwn(docker, image);
  const rt = ownRepoTag(image);
  let remote: string | undefined;
  if (rt) {
    const at = registryTagRef(registry, rt.repo, rt.tag);
    try {
      const d = (await docker.getImage(at).distribution({ authconfig: await registryAuth(credentials, registry) })) as { Descriptor?: { digest?: string } };
      remote = d.Descriptor?.digest;
    } catch (err) {
      const why = firstLine(errorMessage(err));
      const trouble = registryTrouble(registry, why);
      if (trouble) throw new ContainerError('registry_unreachable', `the runner's own image ${image} goes to the nodes from the registry ${registry}, and asking it for ${at} failed: ${trouble}`, { cause: err });
      if (!isUnknownManifest(why) && statusOf(err) !== 401 && statusOf(err) !== 404) {
        throw new ContainerError('registry_unreachable', `asking the registry ${registry} for ${at} failed (${why}): check that it runs, or push again: ${pushCommand(registry, image)}`, { cause: err });
      }
    }
  }
  const pin: Pinning = pinImage({ image, registry, imageId: info.Id, repoDigests: info.RepoDigests, remote });
  if (!pin.ok) throw new ContainerError('image_not_pushed', pin.message);
  return pin.ref;
}
