/**
 * The `$RUNNER_OUTPUT` file: `key=value` lines, and `key<<DELIM` … `DELIM`
 * for multi-line values (as in GitHub Actions). Parsing is pure; reading
 * never follows a symlink nor blocks on a FIFO, and is size-capped.
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';

export const MAX_OUTPUT_FILE = 1024 * 1024;

export interface ParsedOutputs {
  values: Record<string, string>;
  problems: string[];
}

const KEY_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function parseOutputs(text: string): ParsedOutputs {
  // no prototype: an output named __proto__ or constructor is a name like any other
  const values: Record<string, string> = Object.create(null) as Record<string, string>;
  const problems: string[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const key = heredoc[1]!.trim();
      const delim = heredoc[2]!.trim();
      const body: string[] = [];
      let j = i + 1;
      while (j < lines.length && lines[j] !== delim) body.push(lines[j++]!);
      if (j >= lines.length) {
        problems.push(`line ${i + 1}: ${key}<<${delim} is never closed by a line "${delim}"`);
        break;
      }
      setValue(values, problems, key, body.join('\n'), i + 1);
      i = j;
      continue;
    }
    const eq = line.indexOf('=');
    if (eq <= 0) {
      problems.push(`line ${i + 1}: expected key=value or key<<DELIMITER`);
      continue;
    }
    setValue(values, problems, line.slice(0, eq).trim(), line.slice(eq + 1), i + 1);
  }
  return { values, problems };
}

function setValue(values: Record<string, string>, problems: string[], key: string, value: string, line: number): void {
  if (!KEY_RE.test(key)) {
    problems.push(`line ${line}: ${JSON.stringify(key)} is not a valid output name`);
    return;
  }
  values[key] = value;
}

/**
 * Reads the outputs file. Undefined when the step wrote none. A symlink, a
 * FIFO or any non-regular file is refused, a larger file is cut at MAX_OUTPUT_FILE.
 */
export async function readOutputsFile(file: string, what = 'the outputs file', max = MAX_OUTPUT_FILE): Promise<{ text?: string; problem?: string }> {
  let fh;
  try {
    fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return {};
    if (code === 'ELOOP') return { problem: `${what} is a symlink; it was not read` };
    return { problem: `${what} could not be read (${code})` };
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) return { problem: `${what} is not a regular file; it was not read` };
    const buf = Buffer.alloc(Math.min(st.size, max));
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    const text = buf.subarray(0, bytesRead).toString('utf8');
    return st.size > max ? { text, problem: `${what} is larger than ${max} bytes; the rest was ignored` } : { text };
  } finally {
    await fh.close();
  }
}
