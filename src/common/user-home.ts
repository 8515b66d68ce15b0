/** A user's home directory, from /etc/passwd (a uid the runner acts for need not be its own). */
import { readFile } from 'node:fs/promises';

/** The home of `uid` in passwd text, or undefined. Pure. */
export function homeIn(passwd: string, uid: number): string | undefined {
  for (const line of passwd.split('\n')) {
    const f = line.split(':');
    if (f.length >= 7 && Number(f[2]) === uid && f[2] !== '' && f[5]) return f[5];
  }
  return undefined;
}

export async function homeOf(uid: number): Promise<string | undefined> {
  return homeIn(await readFile('/etc/passwd', 'utf8').catch(() => ''), uid);
}
