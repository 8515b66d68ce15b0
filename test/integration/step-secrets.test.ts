/**
 * A step's secrets reach its process, byte-exact, and never the engine's
 * view of anything the runner makes: `docker inspect` of every container,
 * network and volume labelled with the run is read while the step runs, and
 * no secret is found there (its env, command, labels, mounts). Real engine,
 * real git, the real CLI.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, test } from 'node:test';
import { containersOfRun, execPipeline, HOLD_UNTIL_RELEASED, IMAGE, pipelineYaml, projectsForThisFile, releaseStep, writePipeline, type Fixture } from '../fixtures/project.js';

const run = promisify(execFile);
const fixture = projectsForThisFile();
const MARK = 'pl41n-s3cr3t-4711';
/** newlines, quotes, a command substitution, backslashes, printf's own escapes, and a trailing newline */
const HARD = `${MARK} first line\n'single' "double" $(touch /tmp/pwned) \`id\` $HOME \${X} \\back\\slash\\ %s %b \\0101 é ✓\n\n`;
const SECRET_ENV = { RUNNER_TEST_HARD: HARD };

const images: string[] = [];
after(() => {
  // each on its own: one that will not go does not keep the others
  for (const i of images) spawnSync('docker', ['image', 'rm', '-f', i], { stdio: 'ignore' });
});

/**
 * Reads `docker inspect` of every container, network and volume labelled
 * with the fixture's runner home, again and again until stopped: what it saw,
 * and where it found the secret.
 */
function watchInspect(f: Fixture, secret: string) {
  const label = `label=dev.runner.home=${f.home}`;
  const seen = new Set<string>();
  const found = new Set<string>();
  const forms = [secret, JSON.stringify(secret).slice(1, -1), MARK];
  let stopped = false;
  let rounds = 0;
  const ids = async (...args: string[]) => (await run('docker', [...args, '-q', '--filter', label])).stdout.split('\n').filter(Boolean);
  const inspect = async (kind: string, list: string[]) => {
    if (!list.length) return;
    // one may be gone between the listing and the inspect: what is there is read
    const out = await run('docker', [kind, 'inspect', ...list]).then((r) => r.stdout, (e: { stdout?: string }) => e.stdout ?? '');
    for (const id of list) seen.add(`${kind} ${id}`);
    for (const form of forms) if (out.includes(form)) found.add(`${kind} inspect shows the secret (${form === MARK ? 'a part of it' : 'whole'})`);
  };
  const loop = (async () => {
    while (!stopped) {
      await inspect('container', await ids('ps', '-a'));
      await inspect('network', await ids('network', 'ls'));
      await inspect('volume', await ids('volume', 'ls'));
      rounds++;
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    /** resolves once a whole round of inspects has begun and ended after this call */
    aRoundFromNow: async () => {
      const want = rounds + 2;
      while (rounds < want && !stopped) await new Promise((r) => setTimeout(r, 50));
    },
    stop: async () => {
      stopped = true;
      await loop;
      return { seen: [...seen], found: [...found] };
    },
  };
}

/**
 * Each step holds (HOLD_UNTIL_RELEASED, or its own USR1 wait) until a whole round of the watcher's inspects has
 * run while it held, then is released: a sleep of 2 or 3 s was outlasted by the inspects of a busy machine.
 */
function releasedOnceInspected(watch: ReturnType<typeof watchInspect>): (line: string) => void {
  let runId: string | undefined;
  return (line) => {
    runId ??= /^runner: run (\S+):/.exec(line)?.[1];
    const step = /^\[([\w-]+)\] holding until released$/.exec(line)?.[1];
    if (step && runId) void watch.aRoundFromNow().then(() => releaseStep(runId!, step));
  };
}

function withSecret(steps: string): string {
  return pipelineYaml(steps).replace('steps:', 'secrets: [RUNNER_TEST_HARD]\nsteps:');
}

/** a file of the run's branch, as bytes (git() trims) */
function showBytes(f: Fixture, ref: string): Buffer {
  return execFileSync('git', ['-c', 'safe.directory=*', '-C', f.project, 'show', ref]);
}

/** NAME=value entries of a /proc/<pid>/environ copy */
function environ(bytes: Buffer): Map<string, Buffer> {
  const vars = new Map<string, Buffer>();
  for (let at = 0, end = bytes.indexOf(0); end >= 0; at = end + 1, end = bytes.indexOf(0, at)) {
    const entry = bytes.subarray(at, end);
    const eq = entry.indexOf('=');
    vars.set(entry.subarray(0, eq).toString(), entry.subarray(eq + 1));
  }
  return vars;
}

test('a run: step gets a secret of newlines, quotes, $(…), backslashes and a trailing newline byte-exact; docker inspect never shows it', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    withSecret(`  - id: hold
    secrets: [RUNNER_TEST_HARD]
    run: |
      printf %s "$RUNNER_TEST_HARD" > secret.txt
      cat > stdin.txt
      test ! -e /tmp/pwned
      ${HOLD_UNTIL_RELEASED}
`),
  );
  const watch = watchInspect(f, HARD);
  const r = await execPipeline(f, file, [], { env: SECRET_ENV, onLine: releasedOnceInspected(watch) });
  const { seen, found } = await watch.stop();
  assert.equal(r.code, 0, r.stderr);
  assert.ok(seen.some((s) => s.startsWith('container ')), `the step's container was inspected while it ran (${seen.join(', ')})`);
  assert.deepEqual(found, [], 'no secret in any inspect of the run');
  assert.deepEqual(showBytes(f, `${r.json.branch}:secret.txt`), Buffer.from(HARD), 'the step saw the value byte-exact');
  assert.equal(showBytes(f, `${r.json.branch}:stdin.txt`).length, 0, 'the step\'s stdin is empty, as without secrets');
  assert.ok(!(r.stdout + r.stderr).includes(MARK), 'masking is as it was');
  assert.deepEqual(containersOfRun(r.json.runId), []);
});

test('a command: step (exec form, no shell of its own) and a step on an image with an entrypoint get the secret in their environment; inspect never shows it', { timeout: 120_000 }, async () => {
  const f = await fixture();
  // an image whose entrypoint sets a variable, then runs the command: both must still run, in that order
  const entry = `runner-test-secrets-entrypoint:${process.pid}`;
  const made = execFileSync('docker', ['create', IMAGE, 'true'], { encoding: 'utf8' }).trim();
  try {
    execFileSync('docker', ['commit', '--change', 'ENTRYPOINT ["/usr/bin/env", "FROM_ENTRYPOINT=yes"]', made, entry], { stdio: 'ignore' });
  } finally {
    execFileSync('docker', ['rm', '-f', made], { stdio: 'ignore' });
  }
  images.push(entry);
  const file = await writePipeline(
    f,
    withSecret(`  - id: exec-form
    secrets: [RUNNER_TEST_HARD]
    command:
      - perl
      - -e
      - '$SIG{USR1} = sub { $go = 1 }; $| = 1; open(my $i, "<", "/proc/self/environ") or die; open(my $o, ">", "environ.bin") or die; local $/; print {$o} <$i>; close $o; print "holding until released\\n"; select(undef, undef, undef, 0.1) until $go'
  - id: entrypoint
    image: ${entry}
    secrets: [RUNNER_TEST_HARD]
    run: |
      printf '%s:%s' "$FROM_ENTRYPOINT" "$RUNNER_TEST_HARD" > entrypoint.txt
      ${HOLD_UNTIL_RELEASED}
`),
  );
  const watch = watchInspect(f, HARD);
  const r = await execPipeline(f, file, [], { env: SECRET_ENV, onLine: releasedOnceInspected(watch) });
  const { seen, found } = await watch.stop();
  assert.equal(r.code, 0, r.stderr);
  assert.ok(seen.filter((s) => s.startsWith('container ')).length >= 2, `both steps' containers were inspected while they ran (${seen.join(', ')})`);
  assert.deepEqual(found, []);
  const env = environ(showBytes(f, `${r.json.branch}:environ.bin`));
  assert.deepEqual(env.get('RUNNER_TEST_HARD'), Buffer.from(HARD), 'perl, started without a shell of the step\'s, has it exact');
  assert.equal(env.get('RUNNER_STEP_ID')?.toString(), 'exec-form', 'the rest of its environment is as it was');
  assert.ok(![...env.keys()].some((k) => k.startsWith('RUNNER_SECRET_')), 'the prelude leaves none of its own variables');
  assert.deepEqual(showBytes(f, `${r.json.branch}:entrypoint.txt`), Buffer.from(`yes:${HARD}`), 'the image\'s entrypoint ran, then the command, with the secret');
});

test('an image without /bin/sh given a secret: the step is refused before it runs, saying what it needs', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const dir = path.join(f.root, 'no-shell');
  await mkdir(dir);
  await writeFile(path.join(dir, 'hello'), '#!/nothing\n', { mode: 0o755 });
  const noShell = `runner-test-secrets-no-shell:${process.pid}`;
  execFileSync('bash', ['-c', 'tar -c -C "$1" hello | docker import - "$2"', 'import', dir, noShell], { stdio: 'ignore' });
  images.push(noShell);
  const file = await writePipeline(f, withSecret(`  - id: bare\n    image: ${noShell}\n    secrets: [RUNNER_TEST_HARD]\n    command: [/hello]\n`));
  const r = await execPipeline(f, file, [], { env: SECRET_ENV });
  assert.equal(r.code, 1, r.stderr);
  const step = r.json.steps.bare;
  assert.equal(step.status, 'failed');
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
  const entry = rec.steps.find((s: { id: string }) => s.id === 'bare');
  assert.equal(entry.error, 'step_not_started');
  assert.match(entry.message, /^not started: image runner-test-secrets-no-shell:\d+ has no \/bin\/sh, which a step given secrets \(RUNNER_TEST_HARD\) needs: .*Use an image with a POSIX shell at \/bin\/sh, or give the step no secrets:/);
  assert.equal(entry.exitCode, null, 'nothing ran');
  assert.deepEqual(containersOfRun(r.json.runId), []);
});
