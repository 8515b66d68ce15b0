/**
 * Attacks on warm step containers (src/run/warm/), with the real engine: what a hostile step, pipeline or earlier
 * run can do to the promise that a step in a warm container runs as it would in one made for it (the same
 * directory, the same variables, byte for byte), that a step of another shape never claims one, and that nothing
 * of a pool outlives its runner or is removed by another runner of the home.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, projectsForThisFile, runCli, until, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
// a secret a shell would run, split, or decode, were it ever given to one
const SECRET = "warm-$(touch /tmp/atk-secret-ran)`id`\\0101\n-x 'q' \"q\" \\\\ end-0123456789";

const pipeline = (steps: string, name = 'warm-attacks') => `version: 1
name: ${name}
project: { path: project }
secrets: [WARM_TOKEN]
steps:
${steps}`;

const indent = (run: string) =>
  run
    .split('\n')
    .map((l) => `      ${l}`)
    .join('\n');

/** a step behind a gateway (egress), of the toolchain image unless `extra` says otherwise */
const step = (id: string, run: string, extra = '') => `  - id: ${id}
    image: runner/toolchain:latest
    egress: [allowed.example]
    secrets: [WARM_TOKEN]
    timeout: 2m
${extra}    run: |
${indent(run)}
`;

function warmLeft(f: Fixture): { containers: string[]; networks: string[] } {
  const labels = ['--filter', `label=dev.runner.home=${f.home}`, '--filter', 'label=dev.runner.warm-owner'];
  const lines = (args: string[]) => execFileSync('docker', args, { encoding: 'utf8' }).split('\n').filter(Boolean);
  return { containers: lines(['ps', '-a', ...labels, '--format', '{{.Names}}']), networks: lines(['network', 'ls', ...labels, '--format', '{{.Name}}']) };
}

/** warm step containers of this home (made by a pool, claimed or waiting), by name, with their state */
function warmSteps(f: Fixture, all = false): Array<{ name: string; state: string }> {
  return execFileSync('docker', ['ps', ...(all ? ['-a'] : []), '--filter', `label=dev.runner.home=${f.home}`, '--filter', 'label=dev.runner.warm-owner', '--filter', 'label=dev.runner.role=step', '--format', '{{.Names}} {{.State}}'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [name, state] = l.split(' ');
      return { name: name!, state: state! };
    });
}

function logOf(f: Fixture, runId: string, id: string): Promise<string> {
  return readFile(path.join(f.home, 'runs', runId, 'steps', `${id}.log`), 'utf8');
}

/** `runner exec` in the background (killed after `limitMs`: a runner that does not end is a failure, not a hung suite) */
function startExec(f: Fixture, file: string, warm: number | undefined, limitMs = 150_000) {
  const args = [CLI, 'exec', file, '--home', f.home, ...(warm === undefined ? [] : ['--warm', String(warm)])];
  const child = spawn(process.execPath, args, { env: { ...process.env, CI: 'true', WARM_TOKEN: SECRET }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    child.kill('SIGKILL');
  }, limitMs);
  const done = new Promise<number | null>((r) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      r(code);
    }),
  );
  return { child, done, hung: () => hung, out: () => out, runId: () => /run (\d{8}-\d{6}-[a-z0-9]{6})/.exec(out)?.[1] };
}

const WARM = /runner: container: a warm one, made ahead beside its gateway/;

test('a step variable named as the warm prelude\'s own (RUNNER_WARM_VALUE) runs as it does cold: the runner neither fails the step, hangs, nor leaves the claimed container', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline(step('one', 'echo one > one.txt') + step('two', 'echo "value=$RUNNER_WARM_VALUE kind=$RUNNER_WARM_KIND"', '    env: { RUNNER_WARM_VALUE: "mine", RUNNER_WARM_KIND: "E" }\n')));
  const run = startExec(f, file, 1, 90_000);
  const code = await run.done;
  assert.equal(run.hung(), false, `the runner did not end:\n${run.out()}`);
  assert.equal(code, 0, run.out());
  const two = await logOf(f, run.runId()!, 'two');
  assert.match(two, /value=mine kind=E/, two);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
  assert.deepEqual(await readdir(path.join(f.home, 'warm-steps')), []);
});

test('hostile worktree games and values a shell would run: the step in a warm container sees byte for byte what a cold one sees, and nothing runs or moves outside the worktree', { timeout: 300_000 }, async () => {
  const NASTY = "a $(touch /tmp/atk-env-ran) `id` \\\\0101 \\n -x ' \\\" \\\\\\\\ end";
  const env = `    env: { NASTY: "${NASTY}", LEAD: "-n", EMPTY: "", SPACES: "  two  spaces  " }\n`;
  const look = [
    'echo ENV; env | sort | grep -v "^HOSTNAME=" | grep -v "^RUNNER_RUN_ID=" | grep -v "^RUNNER_BRANCH=" | grep -v "^RUNNER_BASE_SHA="',
    'printf %s "$NASTY" | od -An -c; printf "[%s]" "$LEAD" "$EMPTY" "$SPACES"; echo',
    'printf %s "$WARM_TOKEN" | sha256sum',
    'echo TREE; ls -la --time-style=+ | sed 1d; stat -c "%a %u %g" . ; find . -path ./.git -prune -o -print | sort | od -c | md5sum',
    'echo FILES; test -e /tmp/atk-env-ran && echo RAN-ENV; test -e /tmp/atk-secret-ran && echo RAN-SECRET; id; pwd',
  ].join('\n');
  const games = [
    'ln -s /etc etc-link; ln -s / root-link; ln -s .. up-link; mkfifo fifo',
    'python3 -c \'import socket; s=socket.socket(socket.AF_UNIX); s.bind("sock")\'',
    'mkdir locked; echo in > locked/f; chmod 000 locked; touch "$(printf \'new\\nline\')" -- "-rf" ".warm-x"',
    'mkdir many; i=0; while [ $i -lt 3000 ]; do : > many/f$i; i=$((i+1)); done; i=0; while [ $i -lt 2000 ]; do : > top$i; i=$((i+1)); done',
    'chmod 2777 .',
  ].join('\n');
  const body = pipeline(step('one', games, env) + step('two', look, env));
  const runOnce = async (warm: number | undefined) => {
    const file = await writePipeline(f, body, `pipeline-${warm ?? 'cold'}.yaml`);
    const run = startExec(f, file, warm);
    assert.equal(await run.done, 0, run.out());
    return logOf(f, run.runId()!, 'two');
  };
  const f = await fixture();
  const projectBefore = execFileSync('sh', ['-c', 'ls -lA --time-style=+ -I .git .; git status --porcelain --ignored'], { cwd: f.project, encoding: 'utf8' });
  const warmLog = await runOnce(1);
  const coldLog = await runOnce(undefined);
  assert.match(warmLog, WARM, warmLog);
  assert.doesNotMatch(coldLog, WARM);
  const strip = (log: string) => log.split('\n').filter((l) => !l.startsWith('runner: ')).join('\n');
  assert.equal(strip(warmLog), strip(coldLog), 'the warm step saw what the cold one did');
  assert.match(warmLog, new RegExp(createHash('sha256').update(SECRET).digest('hex')), 'the secret reached it byte for byte');
  assert.match(warmLog, /\[-n\]\[\]\[  two  spaces  \]/);
  assert.doesNotMatch(warmLog, /RAN-/, 'no value was run by a shell');
  assert.equal(existsSync('/tmp/atk-env-ran') || existsSync('/tmp/atk-secret-ran'), false);
  assert.equal(execFileSync('sh', ['-c', 'ls -lA --time-style=+ -I .git .; git status --porcelain --ignored'], { cwd: f.project, encoding: 'utf8' }), projectBefore, 'the project directory was not touched');
  assert.deepEqual(await readdir(path.join(f.home, 'warm-steps')), []);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
});

const TAG = 'atk/warm-steps-attacks:1';
function buildImage(tag: string, marker: string): void {
  execFileSync('docker', ['build', '-q', '-t', tag, '-'], { input: `FROM runner/toolchain:latest\nRUN echo ${marker} > /marker\n`, encoding: 'utf8' });
}

test('a step of another shape never claims: an image retagged since the warm one was made, another user, other limits; the same shape again does', { timeout: 300_000 }, async () => {
  const f = await fixture();
  buildImage(TAG, 'first-build');
  try {
    const img = (extra = '') => `    image: ${TAG}\n${extra}`;
    const at = (id: string, run: string, extra = '') => step(id, run, img(extra)).replace('    image: runner/toolchain:latest\n', '');
    const file = await writePipeline(
      f,
      pipeline(
        at('one', 'echo one-running; sleep 25') +
          at('two', 'echo "marker=$(cat /marker)"') +
          at('three', 'echo "uid=$(id -u)"', '    user: "0:0"\n') +
          at('four', 'echo "mem=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"; sleep 5', '    resources: { memory: 300m }\n') +
          at('five', 'echo "mem=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"', '    resources: { memory: 300m }\n'),
      ),
    );
    const run = startExec(f, file, 1);
    // while the first step runs, the pool makes a warm container of its shape: then the tag moves to another image
    await until('a warm container waiting', async () => (/\[one\] one-running/.test(run.out()) && warmSteps(f).length >= 1 ? true : undefined), 60_000);
    buildImage(TAG, 'second-build');
    assert.equal(await run.done, 0, run.out());
    const runId = run.runId()!;
    const two = await logOf(f, runId, 'two');
    assert.match(two, /marker=second-build/, two);
    assert.match(two, /was not used: the image atk\/warm-steps-attacks:1 changed since it was made/, two);
    const three = await logOf(f, runId, 'three');
    assert.match(three, /uid=0/);
    assert.match(three, /was not used: it was made for a step of another user/, three);
    const four = await logOf(f, runId, 'four');
    assert.match(four, /mem=314572800/);
    assert.match(four, /was not used: it was made for a step of another (user|memory)/, four);
    const five = await logOf(f, runId, 'five');
    assert.match(five, WARM, five);
    assert.match(five, /mem=314572800/);
    assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
  } finally {
    execFileSync('docker', ['rmi', '-f', TAG], { stdio: 'ignore' });
  }
});

test('two runners on one home at once: the second one\'s start and end leave the first one\'s waiting warm container to it, and the first one\'s step claims it', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const first = await writePipeline(f, pipeline(step('one', 'echo one-running; sleep 20') + step('two', 'echo two-ran'), 'first'), 'first.yaml');
  const second = await writePipeline(f, pipeline(step('a', 'echo a') + step('b', 'echo b'), 'second'), 'second.yaml');
  const a = startExec(f, first, 1);
  await until('the first runner\'s warm container', async () => (/\[one\] one-running/.test(a.out()) && warmSteps(f).length >= 1 ? true : undefined), 60_000);
  const waiting = warmSteps(f).map((c) => c.name);
  const b = startExec(f, second, 1);
  assert.equal(await b.done, 0, b.out());
  assert.match(await logOf(f, b.runId()!, 'b'), WARM, 'the second runner\'s own pool worked');
  for (const name of waiting) assert.ok(warmSteps(f).some((c) => c.name === name), `the first runner's ${name} is still there after the second ended`);
  assert.equal(await a.done, 0, a.out());
  const two = await logOf(f, a.runId()!, 'two');
  assert.match(two, WARM, two);
  assert.match(two, /two-ran/);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
  assert.deepEqual(await readdir(path.join(f.home, 'warm-steps')), []);
});

test('a runner killed with -9 while a warm container waits: the container ends by itself (its input closed) and the next command removes every gateway, network and directory of the pool', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline(step('one', 'echo one-running; sleep 300') + step('two', 'echo two')));
  const run = startExec(f, file, 1);
  await until('a warm container waiting', async () => (/\[one\] one-running/.test(run.out()) && warmSteps(f).some((c) => c.state === 'running') ? true : undefined), 60_000);
  assert.equal((await readdir(path.join(f.home, 'warm-steps'))).length >= 1, true);
  run.child.kill('SIGKILL');
  await run.done;
  await until('the waiting warm container to end by itself', async () => (warmSteps(f).length === 0 ? true : undefined), 30_000);
  const ls = await runCli(['runs', 'ls', '--home', f.home, '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
  assert.deepEqual(await readdir(path.join(f.home, 'warm-steps')), [], 'no warm container\'s directory is left');
  const leftovers = execFileSync('docker', ['ps', '-aq', '--filter', `label=dev.runner.home=${f.home}`], { encoding: 'utf8' }).trim();
  assert.equal(leftovers, '', 'no container of the home is left');
});

test('a step whose gateway inspects TLS (its trust bundle a file of its own) starts cold as the docs say, and does not teach the pool a shape no step can claim: the plain step after it still claims', { timeout: 240_000 }, async () => {
  const f = await fixture();
  // it runs a while: time for the pool to remake its waiting container to its shape, were it learned
  const inspected = (id: string) => step(id, `echo ${id}; sleep 4`).replace('    egress: [allowed.example]\n', '    egress: [{ host: allowed.example, methods: [GET] }]\n');
  const file = await writePipeline(f, pipeline(step('one', 'echo one') + step('two', 'echo two') + inspected('three') + step('four', 'echo four')));
  const run = startExec(f, file, 1);
  assert.equal(await run.done, 0, run.out());
  const runId = run.runId()!;
  assert.match(await logOf(f, runId, 'two'), WARM, 'a plain step claims');
  const three = await logOf(f, runId, 'three');
  assert.doesNotMatch(three, WARM, three);
  const four = await logOf(f, runId, 'four');
  assert.match(four, WARM, `the step after the inspected one still finds a container of its shape\n${four}`);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
});

test('a persistent_directory project never claims: the user\'s directory is neither renamed nor replaced (same inode), and holds both steps\' work', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const dir = path.join(f.root, 'persistent');
  execFileSync('sh', ['-c', `mkdir "${dir}" && echo mine > "${dir}/mine.txt" && chown -R 65532:65532 "${dir}"`]);
  const inode = statSync(dir).ino;
  const file = await writePipeline(
    f,
    pipeline(step('one', 'echo one > one.txt') + step('two', 'echo two > two.txt; ls')).replace('project: { path: project }', `project: { path: ${dir}, workspace: persistent_directory }`),
  );
  const run = startExec(f, file, 1);
  assert.equal(await run.done, 0, run.out());
  const two = await logOf(f, run.runId()!, 'two');
  assert.doesNotMatch(two, WARM, two);
  assert.match(two, /was not used: the workspace is not a worktree of the run alone/, two);
  assert.equal(statSync(dir).ino, inode, 'the user\'s directory is the one it was');
  assert.deepEqual((await readdir(dir)).sort(), ['mine.txt', 'one.txt', 'two.txt']);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
  assert.deepEqual(await readdir(path.join(f.home, 'warm-steps')), []);
});

test('a hostile step cannot reach the warm containers or gateways waiting for other steps: every address of theirs is unreachable from it', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const probe = [
    'echo probe-waiting; n=0; while [ ! -e targets.txt ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done',
    `python3 - <<'PY'`,
    'import socket',
    'for line in open("targets.txt"):',
    '    kind, _, ip = line.strip().partition(" ")',
    '    if not ip: continue',
    '    for port in (1, 3128, 53):',
    '        s = socket.socket(); s.settimeout(2)',
    '        try:',
    '            s.connect((ip, port)); print(kind, "REACHED", ip, port)',
    '        except ConnectionRefusedError:',
    '            print(kind, "REACHED (refused)", ip, port)',
    '        except OSError as e:',
    '            print(kind, "unreachable", ip, port, type(e).__name__)',
    '        finally: s.close()',
    'PY',
    'rm -f targets.txt',
  ].join('\n');
  const file = await writePipeline(f, pipeline(step('one', 'echo one') + step('hostile', probe)));
  const run = startExec(f, file, 2);
  await until('the hostile step to wait for its targets', async () => (/\[hostile\] probe-waiting/.test(run.out()) ? true : undefined), 120_000);
  const runId = run.runId()!;
  const inspect = (ids: string[]) =>
    JSON.parse(execFileSync('docker', ['inspect', ...ids], { encoding: 'utf8' })) as Array<{ Name: string; Mounts: Array<{ Destination: string; Source: string }>; NetworkSettings: { Networks: Record<string, { IPAddress: string }> } }>;
  // the hostile step's container, its gateway, and (--warm 2) two gateways waiting with a warm container each
  const running = await until('warm containers and gateways waiting for other steps', async () => {
    const all = inspect(execFileSync('docker', ['ps', '-q', '--filter', `label=dev.runner.home=${f.home}`], { encoding: 'utf8' }).split('\n').filter(Boolean));
    return all.length >= 6 ? all : undefined;
  }, 60_000);
  const hostileNets = new Set<string>();
  // the step's networks: those of the container whose workspace is the run's worktree; the targets, every address of the others
  const worktree = path.join(f.home, 'worktrees', runId);
  // (a claimed warm container's config still names the directory it mounted, gone since the worktree took its place)
  const stepC = running.find((c) => c.Mounts.some((m) => m.Destination === '/home/agent/run-workspace' && (m.Source === worktree || !existsSync(m.Source))));
  assert.ok(stepC, `the hostile step's container among ${running.map((c) => c.Name).join(', ')}`);
  for (const n of Object.keys(stepC.NetworkSettings.Networks)) hostileNets.add(n);
  const targets = running.filter((c) => !Object.keys(c.NetworkSettings.Networks).some((n) => hostileNets.has(n))).flatMap((c) => Object.values(c.NetworkSettings.Networks).map((n) => n.IPAddress)).filter(Boolean);
  assert.ok(targets.length >= 2, `the pool's other containers have addresses: ${JSON.stringify(running.map((c) => [c.Name, c.NetworkSettings.Networks]))}`);
  const { writeFile } = await import('node:fs/promises');
  // a control: its own gateway, on its own network, which the probe must reach (else it proves nothing)
  const own = running.find((c) => c !== stepC && Object.keys(c.NetworkSettings.Networks).some((n) => hostileNets.has(n)));
  const ownIp = own && Object.entries(own.NetworkSettings.Networks).find(([n]) => hostileNets.has(n))?.[1].IPAddress;
  assert.ok(ownIp, 'its own gateway has an address on its network');
  await writeFile(path.join(worktree, 'targets.txt'), [`own ${ownIp}`, ...targets.map((t) => `other ${t}`)].join('\n') + '\n');
  assert.equal(await run.done, 0, run.out());
  const log = await logOf(f, runId, 'hostile');
  assert.match(log, /own REACHED \S+ 3128/, `the probe reaches its own gateway's proxy\n${log}`);
  assert.match(log, /other unreachable/, log);
  assert.doesNotMatch(log, /other REACHED/, `a waiting warm container or another step's gateway was reachable from a hostile step\n${log}`);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
});

test('a step in a warm container that outlives its timeout is stopped as a cold one is (it ignores TERM), and nothing of it is left', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipeline(step('one', 'echo one') + step('stuck', "trap '' TERM; echo stuck-running; sleep 120 & wait; sleep 120").replace('    timeout: 2m\n    run: |\n      trap', '    timeout: 5s\n    run: |\n      trap')),
  );
  const started = Date.now();
  const run = startExec(f, file, 1);
  const code = await run.done;
  assert.notEqual(code, 0, run.out());
  assert.ok(Date.now() - started < 90_000, `stopped in time: ${Date.now() - started} ms`);
  const log = await logOf(f, run.runId()!, 'stuck');
  assert.match(log, WARM, log);
  assert.match(log, /stuck-running/);
  assert.match(run.out(), /stuck.*(timed out|timeout)/i, run.out());
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
  assert.equal(execFileSync('docker', ['ps', '-aq', '--filter', `label=dev.runner.home=${f.home}`], { encoding: 'utf8' }).trim(), '', 'no container of the home is left');
});
