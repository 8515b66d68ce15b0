/**
 * The runner's own images in a registry the swarm's nodes pull from: how a
 * registry address is written, what an own image is called there, which of
 * this engine's records says the registry holds exactly this image, and what
 * to tell the user when the registry cannot be used. Pure.
 *
 * A node runs an own image by digest (`HOST:PORT/runner/base@sha256:…`): the
 * registry's tag says which manifest is meant, and the engine that pushed
 * this image recorded that manifest's digest in its RepoDigests. Only a
 * digest this engine recorded for this very image is used, so a tag that
 * someone else pushed over (a registry without auth, a rebuild elsewhere)
 * is refused, never run.
 */
import { normalizedRepository } from './own-images.js';

/**
 * A registry as the engine names it: `HOST:PORT` or `HOST` (a DNS name, an
 * IPv4 address or a bracketed IPv6 one). The engine, not the runner, decides
 * between https and plain http (insecure-registries), so no scheme is taken.
 * Returns the address, or throws an Error whose message says what to give.
 */
export function parseRegistry(text: string): string {
  const t = text.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(t)) {
    throw new Error(`--registry takes HOST:PORT, not a URL (${JSON.stringify(text)}): the engine chooses https, or plain http for a registry in its insecure-registries`);
  }
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::(\d{1,5}))?$/.exec(t);
  if (!m || (m[2] !== undefined && (Number(m[2]) < 1 || Number(m[2]) > 65535))) {
    throw new Error(`--registry takes HOST:PORT (e.g. 10.213.7.1:5000, registry.example.com:5000), got ${JSON.stringify(text)}`);
  }
  // a bare name without a dot or port would read as a Docker Hub namespace (`runner` in runner/base)
  if (m[2] === undefined && !m[1]!.includes('.') && !m[1]!.startsWith('[') && m[1] !== 'localhost') {
    throw new Error(`--registry ${JSON.stringify(text)} has no port and no dot: the engine would take it for a Docker Hub namespace; give HOST:PORT`);
  }
  return m[1]!.toLowerCase() + (m[2] !== undefined ? `:${m[2]}` : '');
}

/** An own image's repository and tag (`runner/base`, `latest`); undefined when the reference pins a digest instead of a tag. */
export function ownRepoTag(ref: string): { repo: string; tag: string } | undefined {
  if (ref.includes('@')) return undefined;
  const repo = normalizedRepository(ref).replace(/^docker\.io\//, '');
  const last = ref.slice(ref.lastIndexOf('/') + 1);
  const colon = last.indexOf(':');
  return { repo, tag: colon === -1 ? 'latest' : last.slice(colon + 1) };
}

/** Where an own image goes in the registry: `HOST:PORT/runner/base:latest`. */
export function registryTagRef(registry: string, repo: string, tag: string): string {
  return `${registry}/${repo}:${tag}`;
}

/** What a job names: the image in the registry, pinned by its manifest's digest. */
export function pinnedRef(registry: string, repo: string, digest: string): string {
  return `${registry}/${repo}@${digest}`;
}

/** The manifest digests this engine recorded for the image in `registry`'s `repo` (its RepoDigests), in order. */
export function recordedDigests(repoDigests: readonly string[] | undefined, registry: string, repo: string): string[] {
  const prefix = `${registry}/${repo}@`;
  return (repoDigests ?? []).filter((d) => d.startsWith(prefix) && /^sha256:[0-9a-f]{64}$/.test(d.slice(prefix.length))).map((d) => d.slice(prefix.length));
}

/** The command that pushes `image` (as the pipeline names it) to `registry`. */
export function pushCommand(registry: string, image: string): string {
  return `runner images push --registry ${registry} ${image}`;
}

export type Pinning =
  | { ok: true; ref: string; digest: string }
  | { ok: false; reason: 'not_pushed' | 'other_image'; message: string };

/**
 * Whether the registry's tag is exactly this engine's image: `remote` is the
 * digest the registry gives for `HOST:PORT/repo:tag` (undefined: it has no
 * such tag), `repoDigests` and `imageId` are this engine's image.
 */
export function pinImage(args: { image: string; registry: string; imageId: string; repoDigests: readonly string[] | undefined; remote: string | undefined }): Pinning {
  const { image, registry, imageId, repoDigests, remote } = args;
  const rt = ownRepoTag(image);
  if (!rt) {
    return { ok: false, reason: 'not_pushed', message: `image ${image} names a digest: with --registry, name the runner's own images by tag (runner/base:latest), so that the registry's tag can be matched to this engine's image` };
  }
  const at = registryTagRef(registry, rt.repo, rt.tag);
  const id = imageId.slice(0, 19);
  if (remote === undefined) {
    return { ok: false, reason: 'not_pushed', message: `image ${image} is not in the registry ${registry} (no ${at}): the swarm's nodes get the runner's own images from there; push it first: ${pushCommand(registry, image)}` };
  }
  if (!recordedDigests(repoDigests, registry, rt.repo).includes(remote)) {
    return { ok: false, reason: 'other_image', message: `the registry's ${at} (${remote.slice(0, 19)}) is not this engine's ${image} (${id}): it was pushed at another version, or by someone else; push this one: ${pushCommand(registry, image)}` };
  }
  return { ok: true, ref: pinnedRef(registry, rt.repo, remote), digest: remote };
}

/** The engine's words for "the registry has no such manifest or repository". */
export function isUnknownManifest(message: string): boolean {
  return /manifest unknown|name unknown|repository name not known|no such manifest|not found: manifest/i.test(message);
}

/**
 * What to do when the engine could not reach or trust the registry, from its
 * message; undefined when the message is about something else.
 */
export function registryTrouble(registry: string, message: string): string | undefined {
  const m = message;
  if (/server gave HTTP response to HTTPS client/i.test(m)) {
    return `the registry at ${registry} speaks plain HTTP and this engine does not trust it: add it to "insecure-registries" in /etc/docker/daemon.json on this machine and on every node (then reload each engine: kill -HUP $(pidof dockerd)), or serve the registry over TLS`;
  }
  if (/x509: certificate signed by unknown authority|certificate is not trusted|unknown authority/i.test(m)) {
    return `this engine does not trust the certificate of the registry at ${registry}: put the CA that signed it at /etc/docker/certs.d/${registry}/ca.crt on this machine and on every node (read at each pull; no reload)`;
  }
  if (/x509: (cannot validate certificate|certificate is valid for)|doesn't contain any IP SANs/i.test(m)) {
    return `the certificate of the registry at ${registry} does not name that address: give the registry a certificate for it (an IP SAN for an address), or use the name it has`;
  }
  if (/x509|tls:|certificate/i.test(m)) {
    return `TLS with the registry at ${registry} failed: check its certificate, and /etc/docker/certs.d/${registry}/ on this machine and on every node`;
  }
  if (/connection refused/i.test(m)) {
    return `nothing answers at ${registry}: start the registry (scripts/swarm-lab.sh up starts the lab's at its manager's address, port 5000), or check the address`;
  }
  if (/no route to host|i\/o timeout|network is unreachable|Client\.Timeout|deadline exceeded|timed out/i.test(m)) {
    return `the registry at ${registry} cannot be reached from this engine: check the address and the network between them`;
  }
  if (/no such host|server misbehaving|Temporary failure in name resolution/i.test(m)) {
    return `the engine cannot resolve the registry's name in ${registry}: use an address, or a name its resolver knows`;
  }
  if (/unauthorized|authentication required|no basic auth credentials|denied|forbidden/i.test(m)) {
    return `the registry at ${registry} wants credentials, or refused the ones it was given: log in with \`docker login ${registry}\` (the runner pushes and reads with the docker client's credentials for it; a run takes --registry-auth FILE too: docs/private-images.md)`;
  }
  return undefined;
}

/** Why a swarm task could not start (its node's words), and what would fix it, for an image named in the registry. */
export function nodePullHint(registry: string, image: string, pinned: string): string {
  return `a node that lacks ${pinned.slice(0, pinned.indexOf('@') + 20)}… pulls it from ${registry} (${image} pushed there): does the node reach ${registry}, and does its engine trust it (/etc/docker/certs.d/${registry}/ca.crt, or insecure-registries for plain HTTP)?`;
}
