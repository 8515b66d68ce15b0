/**
 * The warm prelude (secret-env.ts WARM_PRELUDE) run by real shells: a warm container's command arrives on its
 * standard input, every byte of every word and variable exactly (any byte but NUL, empty words, words that look
 * like options or code), and runs with an empty standard input; no input at all runs nothing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { encodeWarmStart, WARM_PRELUDE, WARM_PRELUDE_NAME } from '../../src/container/secret-env.js';

const ALL_BYTES = Buffer.from(Array.from({ length: 255 }, (_, i) => i + 1)).toString('latin1');
const HARD = `line one\n'single' "double" $(touch /tmp/pwned) \`id\` $HOME \${X} \\back\\slash\\ %s %b \\0101 \\n\ttab  \n\n`;

function run(shell: string, input: string): { status: number | null; stdout: Buffer; stderr: string } {
  const r = spawnSync(shell, ['-c', WARM_PRELUDE, WARM_PRELUDE_NAME], { input, env: { PATH: process.env.PATH }, maxBuffer: 1 << 26 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr.toString() };
}

/** NUL-separated fields: what `printf '%s\0'` or /proc/self/environ print. */
function fields(b: Buffer): string[] {
  const out: string[] = [];
  for (let at = 0, end = b.indexOf(0); end >= 0; at = end + 1, end = b.indexOf(0, at)) out.push(b.subarray(at, end).toString('utf8'));
  return out;
}

for (const shell of (process.env.SECRET_ENV_SHELLS ?? 'dash bash sh').split(' ')) {
  test(`${shell}: the command's words arrive exactly, and run with an empty stdin`, () => {
    const words = ['', HARD, '-n', '--', ' lead and trail ', 'é ✓ 🦀', ALL_BYTES.replace(/[\x80-\xff]/g, '')];
    // printf prints each word NUL-ended, then cat shows the command's stdin is empty
    const argv = ['sh', '-c', 'printf "%s\\0" "$@"; cat -', 'sh', ...words];
    const r = run(shell, encodeWarmStart({}, argv));
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(fields(r.stdout), words);
  });

  test(`${shell}: the step's variables arrive exactly, over the image's`, () => {
    const env = { HARD, EMPTY: '', UNICODE: 'é ✓ 🦀', PATH: process.env.PATH ?? '/usr/bin:/bin', lower_case: 'x' };
    const r = run(shell, encodeWarmStart(env, ['cat', '/proc/self/environ']));
    assert.equal(r.status, 0, r.stderr);
    const seen = new Map(fields(r.stdout).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
    for (const [k, v] of Object.entries(env)) assert.equal(seen.get(k), v, k);
    assert.ok(![...seen.keys()].some((k) => k.startsWith('RUNNER_WARM_')), 'the prelude leaves none of its own');
  });

  test(`${shell}: no input (the runner gone, or the container given back) runs nothing and says so`, () => {
    const r = run(shell, '');
    assert.equal(r.status, 125);
    assert.match(r.stderr, /no command came/);
  });

  test(`${shell}: a line it does not know, or a bad name, stops it before any command`, () => {
    assert.equal(run(shell, 'X - \\0141\nA - \\0164\\0162\\0165\\0145\n').status, 125);
    assert.equal(run(shell, 'E 1BAD \\0141\nA - \\0164\\0162\\0165\\0145\n').status, 125);
  });
}

test('encodeWarmStart refuses what no process can be given', () => {
  assert.throws(() => encodeWarmStart({}, []), /at least one word/);
  assert.throws(() => encodeWarmStart({ 'A-B': 'x' }, ['true']), /not an environment variable name/);
  assert.throws(() => encodeWarmStart({ RUNNER_WARM_VALUE: 'x' }, ['true']), /runner's own/);
  assert.throws(() => encodeWarmStart({ A: 'a\0b' }, ['true']), /NUL/);
  assert.throws(() => encodeWarmStart({}, ['a\0b']), /NUL/);
});

test('plain values come as they are (no subshell to decode them), any other escaped', () => {
  assert.equal(encodeWarmStart({ A: 'http://runner-gateway:3128', B: 'a b', C: '' }, ['sh', 'x\\y']), 'P A http://runner-gateway:3128\nE B \\0141\\0040\\0142\nP C \nB - sh\nA - \\0170\\0134\\0171\n');
});
