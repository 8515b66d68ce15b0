/** The names a swarm takes, and how it says a name is held or an overlay hiccuped. Pure. */
import { createHash } from 'node:crypto';
import { errorMessage } from '../../common/errors.js';

/** The engine's "already exists" or the swarm's "name conflicts with an existing object": the name is held. Pure. */
export function nameTaken(err: unknown): boolean {
  return /already exists|name conflicts with an existing object/i.test(errorMessage(err));
}

/** A service name the swarm takes (a DNS label): the container's name with what it refuses turned to -, cut with a hash to stay unique. Pure. */
export function serviceName(name: string, max = 63): string {
  const safe = name.replace(/[^A-Za-z0-9-]/g, '-').replace(/^-+/, '');
  return safe.length <= max ? safe : `${safe.slice(0, max - 9)}-${createHash('sha256').update(name).digest('hex').slice(0, 8)}`;
}

/** An overlay's name, a DNS label (the network adds -net), one per try: a failed try's may still be going away. */
export function overlayName(base: string, attempt: number): string {
  return serviceName(`${base}${attempt > 1 ? attempt : ''}`, 59);
}

/** How a busy swarm manager fails to attach a container to a new overlay, or holds a name still being removed. */
export function overlayHiccup(err: unknown): boolean {
  return /attaching to network failed|context deadline exceeded|name conflicts with an existing object/.test(errorMessage(err));
}
