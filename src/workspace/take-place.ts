/**
 * A directory made ahead takes another's place: what `target` holds moves into
 * `slot` (renames, on one filesystem), `slot` gets `target`'s mode and owner,
 * and is renamed to `target`'s path. For a warm step container
 * (src/run/warm/), which mounted `slot` when it was made: it then sees the
 * step's directory, without a byte copied. `target` is the runner's own (a
 * run's worktree, a step's io directory) and nothing runs in it meanwhile.
 * A failure before the last rename puts everything back.
 */
import { randomBytes } from 'node:crypto';
import { chmod, chown, lstat, readdir, rename, rmdir } from 'node:fs/promises';
import path from 'node:path';

export async function takePlace(target: string, slot: string, o: { slotHolds?: boolean } = {}): Promise<{ dev: number; ino: number }> {
  const st = await lstat(target);
  if (!st.isDirectory()) throw new Error(`${target} is not a directory: a warm container cannot take its place`);
  const slotSt = await lstat(slot);
  if (!slotSt.isDirectory()) throw new Error(`${slot} is not a directory: a warm container's directory was changed`);
  // `slotHolds`: the slot holds what is its own (an overlay's work directory, the kernel's), and the target must be empty
  if (o.slotHolds ? (await readdir(target)).length : (await readdir(slot)).length) {
    throw new Error(o.slotHolds ? `${target} is not empty: an overlay's work directory is taken over only empty` : `${slot} is not an empty directory: a warm container's directory was changed`);
  }
  // beside the target first: another filesystem (EXDEV) fails here, before anything of the target moved
  const staged = path.join(path.dirname(target), `.warm-${path.basename(target)}-${randomBytes(4).toString('hex')}`);
  await rename(slot, staged);
  const moved: string[] = [];
  try {
    await chown(staged, st.uid, st.gid);
    await chmod(staged, st.mode & 0o7777);
    for (const name of await readdir(target)) {
      await rename(path.join(target, name), path.join(staged, name));
      moved.push(name);
    }
    await rmdir(target);
  } catch (err) {
    for (const name of moved) await rename(path.join(staged, name), path.join(target, name)).catch(() => undefined);
    await rename(staged, slot).catch(() => undefined);
    throw err;
  }
  await rename(staged, target);
  const now = await lstat(target);
  return { dev: now.dev, ino: now.ino };
}
