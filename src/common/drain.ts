/** Writing to a stream that may be slower than the writer: wait for it to take what it has before writing more. */
import type { Writable } from 'node:stream';

/**
 * Writes `text`; when the stream's buffer is full, resolves once it drained.
 * False when the stream closed or failed first (stop writing to it).
 */
export function writeAndDrain(stream: Writable, text: string): Promise<boolean> {
  if (stream.destroyed || stream.writableEnded) return Promise.resolve(false);
  if (stream.write(text)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (ok: boolean) => () => {
      stream.off('drain', onDrain);
      stream.off('close', onClose);
      stream.off('error', onClose);
      resolve(ok);
    };
    const onDrain = done(true);
    const onClose = done(false);
    stream.once('drain', onDrain);
    stream.once('close', onClose);
    stream.once('error', onClose);
  });
}
