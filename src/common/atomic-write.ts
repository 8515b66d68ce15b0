/** Writes a file atomically: a temporary file beside it, fsync, rename. */
import { open, rename } from 'node:fs/promises';

export async function writeFileAtomic(file: string, data: string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`;
  const fh = await open(tmp, 'w', 0o644);
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
}
