/**
 * A runner inside a container (docker compose) hands bind mounts to the host's
 * engine, and the engine resolves their sources on the host, not in the
 * runner's container. So every directory the runner mounts into a step must
 * be the same directory at the same path in both: mounted into the runner's
 * container from the host at the identical path. This checks that, from the
 * runner's own container's mounts, and says what to change when it is not so.
 * Pure.
 */

export interface OwnMount {
  type: string;
  source: string;
  destination: string;
}

/** The runner's own container id, from /proc/self/mountinfo (its /etc/hostname and friends come from the engine's containers folder). */
export function ownContainerId(mountinfo: string): string | undefined {
  return /\/containers\/([0-9a-f]{64})\/(?:hostname|hosts|resolv\.conf)\b/.exec(mountinfo)?.[1];
}

/** Why the engine would not find `p` at the same path, or undefined when it would. */
export function hostPathProblem(p: string, mounts: readonly OwnMount[]): string | undefined {
  const covering = mounts
    .filter((m) => p === m.destination || p.startsWith(m.destination.endsWith('/') ? m.destination : `${m.destination}/`))
    .sort((a, b) => b.destination.length - a.destination.length)[0];
  if (!covering) {
    return `${p} exists only inside the runner's container, and the Docker engine looks for mount sources on the host: mount the host's directory at the identical path ("- ${p}:${p}" in docker-compose.yml)`;
  }
  if (covering.type !== 'bind' || covering.source !== covering.destination) {
    const from = covering.type === 'bind' ? `the host's ${covering.source}` : `a ${covering.type} (${covering.source} on the host)`;
    const fix =
      covering.type === 'bind'
        ? `mount it at the identical path ("- ${covering.source}:${covering.source}" in docker-compose.yml) and give the runner that path`
        : `use a host directory mounted at the identical path ("- /srv/dir:/srv/dir" in docker-compose.yml); a named volume cannot be`;
    return `${p} is mounted into the runner's container at ${covering.destination} from ${from}, so the Docker engine would look for ${p} at the wrong place on the host: ${fix}`;
  }
  return undefined;
}
