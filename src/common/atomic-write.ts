/** Writes a file atomically: a temporary file beside it, fsync, rename. */
import { randomBytes } from 'node:crypto';
import { open, rename } from 'node:fs/promises';

export async function writeFileAtomic(file: string, data: string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  const fh = await open(tmp, 'w', 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
}
