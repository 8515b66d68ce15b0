/** Who runs this CLI: the OS user, as a run's or a delivery's record names them. */
import os from 'node:os';

export function osUser(): string | undefined {
  try {
    return os.userInfo().username;
  } catch {
    // no passwd entry for this uid (a container started with --user): the environment may know
    return process.env.USER || undefined;
  }
}

/** `{ via: 'cli', user }`, the user left out when unknown. */
export function cliActor(): { via: 'cli'; user?: string } {
  const user = osUser();
  return { via: 'cli', ...(user ? { user } : {}) };
}
