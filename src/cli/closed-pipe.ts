/**
 * A closed pipe on stdout or stderr (`runner runs ls | head -1`) ends the
 * command quietly, as git does: no message, exit 141 (128 + SIGPIPE, what a
 * shell reports for git there). A command that owns something to clean up
 * (exec: a running step) asks to hear of it instead, and ends itself politely;
 * what it writes after that goes nowhere.
 */

/** The exit status of a command whose output was closed before it finished. */
export const CLOSED_PIPE_EXIT = 141;

const listeners = new Set<() => void>();
let closed = false;

/** Whether stdout or stderr was closed under the command. */
export function pipeClosed(): boolean {
  return closed;
}

/** Calls `fn` (once) when the output closes, rather than ending the process; returns the undo. */
export function onClosedPipe(fn: () => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** Whether an error is a write to a pipe whose reader has gone. */
export function isClosedPipe(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === 'EPIPE';
}

/** Installs the handler on stdout and stderr; `exit` ends the process. */
export function watchOutput(exit: (code: number) => void): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err) => {
      if (!isClosedPipe(err) && !silenced.has(stream)) throw err;
      silence(stream);
      if (closed) return;
      closed = true;
      if (!listeners.size) return exit(CLOSED_PIPE_EXIT);
      for (const fn of [...listeners]) fn();
    });
  }
}

const silenced = new Set<NodeJS.WriteStream>();

/** What is still written to a closed stream goes nowhere, at once: no write fails again, no one waits for a drain. */
function silence(stream: NodeJS.WriteStream): void {
  if (silenced.has(stream)) return;
  silenced.add(stream);
  stream.write = (() => true) as typeof stream.write;
  Object.defineProperty(stream, 'writableLength', { value: 0 });
  stream.emit('drain');
}
