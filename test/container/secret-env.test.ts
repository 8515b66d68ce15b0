/**
 * The secrets prelude run by real shells (dash, bash and sh here; SECRET_ENV_SHELLS="/path/to/ash ..." runs
 * it with others, e.g. busybox): every byte but NUL arrives exactly, the command's stdin stays empty.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { encodeSecretEnv, preludeArgv, secretNameProblem } from '../../src/container/secret-env.js';

const ALL_BYTES = Buffer.from(Array.from({ length: 255 }, (_, i) => i + 1)).toString('latin1');
const VALUES: Record<string, string> = {
  HARD: `line one\n'single' "double" $(touch /tmp/pwned) \`id\` $HOME \${X} \\back\\slash\\ %s %b \\0101 \\n\ttab  \n\n`,
  SPACES: '  leading and trailing  ',
  UNICODE: 'é ✓ 🦀',
  DASH: '-n',
  lower_case: 'x',
};

/** The environment the command got, read by it from /proc/self/environ: bytes, NUL-separated. */
function environOf(shell: string, env: Record<string, string>, input = encodeSecretEnv(env), from?: string): Map<string, Buffer> {
  const [, ...rest] = preludeArgv(['cat', '/proc/self/environ', '-'], from);
  const r = spawnSync(shell, rest, { input, env: { PATH: process.env.PATH }, maxBuffer: 1 << 26 });
  assert.equal(r.status, 0, `${shell}: ${r.stderr}`);
  const vars = new Map<string, Buffer>();
  let at = 0;
  for (let end = r.stdout.indexOf(0); end >= 0; at = end + 1, end = r.stdout.indexOf(0, at)) {
    const entry = r.stdout.subarray(at, end);
    const eq = entry.indexOf('=');
    vars.set(entry.subarray(0, eq).toString(), entry.subarray(eq + 1));
  }
  assert.equal(r.stdout.subarray(at).length, 0, `${shell}: the command's stdin (read by cat after its environ) is empty`);
  return vars;
}

for (const shell of (process.env.SECRET_ENV_SHELLS ?? 'dash bash sh').split(' ')) {
  test(`${shell}: the prelude exports each secret byte-exact and execs the command with an empty stdin`, () => {
    const seen = environOf(shell, VALUES);
    for (const [name, value] of Object.entries(VALUES)) assert.deepEqual(seen.get(name), Buffer.from(value), `${shell}: ${name}`);
    assert.ok(!seen.has('RUNNER_SECRET_NAME') && !seen.has('RUNNER_SECRET_VALUE'), 'the prelude leaves none of its own variables');
  });

  test(`${shell}: every byte from 1 to 255 decodes to itself, and a value near 128 KiB arrives whole`, () => {
    // the bytes themselves, escaped as the encoder does (a value is UTF-8, so not every byte sequence comes from it)
    const raw = `ALL ${[...ALL_BYTES].map((c) => `\\0${c.charCodeAt(0).toString(8).padStart(3, '0')}`).join('')}\n`;
    assert.deepEqual(environOf(shell, {}, raw).get('ALL'), Buffer.from(ALL_BYTES, 'latin1'));
    const big = 'x\n$'.repeat(43_000);
    const seen = environOf(shell, { ALL: ALL_BYTES, BIG: big });
    assert.deepEqual(seen.get('ALL'), Buffer.from(ALL_BYTES, 'utf8'));
    assert.deepEqual(seen.get('BIG'), Buffer.from(big));
  });
}

test('no secret, no line: the command runs as it would', () => {
  assert.equal(encodeSecretEnv({}), '');
  const seen = environOf('dash', {});
  assert.ok(!seen.has('HARD'));
});

test('the input is printable ASCII, one line a secret: nothing a shell reads as more than data', () => {
  const input = encodeSecretEnv(VALUES);
  assert.match(input, /^([A-Za-z_][A-Za-z0-9_]* (\\0[0-7]{3})*\n)+$/);
  assert.equal(input.split('\n').length - 1, Object.keys(VALUES).length);
});

test('a name the prelude cannot carry is refused, saying why', () => {
  assert.equal(secretNameProblem('NPM_TOKEN'), undefined);
  assert.match(secretNameProblem('RUNNER_SECRET_VALUE')!, /the runner's own.*rename the secret/);
  assert.match(secretNameProblem('A=B')!, /not an environment variable name/);
  assert.throws(() => encodeSecretEnv({ '1X': 'v' }), /not an environment variable name/);
  assert.throws(() => encodeSecretEnv({ X: 'a\0b' }), /NUL byte/);
});

test('a line with a bad name stops the prelude before the command (exit 125)', () => {
  const [, ...rest] = preludeArgv(['touch', '/tmp/never']);
  const r = spawnSync('dash', rest, { input: 'X;rm -rf / \\0101\n', encoding: 'utf8' });
  assert.equal(r.status, 125);
  assert.match(r.stderr, /runner-secrets: a secret came without a valid name/);
});

test('from a file (a swarm secret): the prelude reads it, not its stdin, which the command gets empty', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'secret-env-'));
  try {
    const file = path.join(dir, 'runner-secret-env');
    writeFileSync(file, encodeSecretEnv(VALUES), { mode: 0o400 });
    const seen = environOf('dash', {}, 'NOT_THIS \\0101\n', file);
    for (const [name, value] of Object.entries(VALUES)) assert.deepEqual(seen.get(name), Buffer.from(value), name);
    assert.ok(!seen.has('NOT_THIS'));
    assert.throws(() => preludeArgv(['true'], "/x'; rm -rf /"), /plain absolute path/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
