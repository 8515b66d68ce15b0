/**
 * The SHA-256 of a regular file a step may have made: never through a link,
 * never a FIFO or a device (opened non-blocking, then checked a file), any
 * size (a small file in one read, a big one streamed). Undefined when it is
 * not a regular file or cannot be opened; a read error throws.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

const SMALL_FILE = 64 * 1024;

export async function fileSha(file: string): Promise<string | undefined> {
  let fh;
  try {
    fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return undefined;
    const h = createHash('sha256');
    if (st.size <= SMALL_FILE) {
      // Most files are small: one read, no stream.
      const buf = Buffer.allocUnsafe(st.size + 1);
      let got = 0;
      for (let n = 1; n > 0 && got < buf.length; got += n) n = (await fh.read(buf, got, buf.length - got, got)).bytesRead;
      if (got <= st.size) return h.update(buf.subarray(0, got)).digest('hex'); // else it grew meanwhile: read it as a stream
    }
    for await (const chunk of fh.createReadStream({ autoClose: false, start: 0 })) h.update(chunk as Buffer);
    return h.digest('hex');
  } finally {
    await fh.close();
  }
}
