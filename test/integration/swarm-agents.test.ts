/**
 * Agents and egress: on a real 3-node swarm on this machine (scripts/swarm-lab.sh),
 * with --engine swarm: the real Claude Code and Codex CLIs on a worker, their
 * gateways (the real runner/gateway image) on the manager, only the model
 * scripted (test/fixtures/model-server.ts). Every promise of the local gateway
 * holds: the work is committed, calls metered, a denied host refused, no name
 * resolved, the key never on a worker, budgets, a lost node's calls counted,
 * and no container left on a worker after a timeout or a cancel; with --warm, the
 * same behind warm gateways and relays, attacked (a killed runner's warm ones are
 * removed by the next, a warm relay allows nothing). The lab is
 * brought up for this file and taken down after it; the node_lost test is
 * last, since it kills a worker's engine.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { IMPLEMENT_REVIEW, IMPLEMENT_REVIEW_COMMITS } from '../fixtures/implement-review.js';
import { ModelServer, type Script } from '../fixtures/model-server.js';
import { commitsOn, execPipeline, git, projectsForThisFile, runCli, spawnServe, until, writePipeline, type CliResult, type Fixture, type ServeProcess } from '../fixtures/project.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const LAB = path.join(REPO, 'scripts/swarm-lab.sh');
const run = promisify(execFile);
const fixture = projectsForThisFile();
const SWARM = ['--engine', 'swarm'];
const WORKERS = ['lab-w1', 'lab-w2'];
const onWorker = (w: string) => ['-H', `unix:///run/runner-swarm-lab/${w}.sock`];
const WS = '/home/agent/run-workspace';
const ANTHROPIC_KEY = 'sk-ant-api03-swarm-agents-key-' + 'q'.repeat(16);
const OPENAI_KEY = 'sk-proj-swarm-agents-key-' + 'z'.repeat(16);

before(async () => {
  const images = 'runner/base:latest runner/claude-code:latest runner/codex:latest runner/toolchain:latest';
  await run('bash', [LAB, 'up'], { env: { ...process.env, LAB_IMAGES: images }, maxBuffer: 1 << 24 });
}, { timeout: 600_000 });
after(async () => {
  await run('bash', [LAB, 'down'], { maxBuffer: 1 << 24 });
}, { timeout: 300_000 });

const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));
async function model(script: Script): Promise<ModelServer> {
  const s = await ModelServer.start(script);
  servers.push(s);
  return s;
}

const record = (f: Fixture, runId: string) => JSON.parse(readFileSync(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
const events = (f: Fixture, runId: string) =>
  readFileSync(path.join(f.home, 'runs', runId, 'events.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { message: string; host?: string });
const calls = (f: Fixture, runId: string) =>
  readFileSync(path.join(f.home, 'runs', runId, 'calls.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const services = () => execFileSync('docker', ['service', 'ls', '-q', '--filter', 'label=dev.runner.run-id'], { encoding: 'utf8' }).trim();

const agentPipeline = (o: { preset: 'claude-code' | 'codex'; server: ModelServer; secret: string; extra?: string; step?: string }) => `version: 1
name: agent
project: { path: project, push: never }
secrets: [${o.secret}]
agents:
  coder:
    use: ${o.preset}
    base_url: ${o.server.url}
${o.preset === 'codex' ? '    model: gpt-5-codex\n' : '    max_turns: 10\n'}${o.extra ?? ''}steps:
  - id: implement
    agent: coder
    placement: ["node.role == worker"]
    timeout: 3m
    prompt: Write hello.txt that greets the reader, then probe the network.
${o.step ?? ''}`;

// What the step finds of the world: a host not on its allowlist (through its gateway, as any HTTP client would), and a name.
const PROBE = `curl -s -m 10 -o /dev/null -w '%{http_code}' http://denied.example/ > denied.txt; getent hosts example.org > /dev/null; echo $? > dns.txt`;

const presets = [
  {
    preset: 'claude-code' as const,
    secret: 'ANTHROPIC_API_KEY',
    env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY },
    turns: [
      { tool: { name: 'Write', input: { file_path: `${WS}/hello.txt`, content: 'hello from a worker\n' } } },
      { tool: { name: 'Bash', input: { command: PROBE, description: 'probe the network' } } },
      { text: 'Wrote hello.txt and probed.' },
    ],
  },
  {
    preset: 'codex' as const,
    secret: 'OPENAI_API_KEY',
    env: { OPENAI_API_KEY: OPENAI_KEY },
    turns: [
      { tool: { name: 'exec_command', input: { cmd: "printf 'hello from a worker\\n' > hello.txt" } } },
      { tool: { name: 'exec_command', input: { cmd: PROBE } } },
      { text: 'Wrote hello.txt and probed.' },
    ],
  },
];

for (const p of presets) {
  test(`${p.preset} on a worker edits the project: committed, usage as the model reported it, a denied host refused, no name resolved`, { timeout: 180_000 }, async () => {
    const f = await fixture({ owner: 1000 });
    const server = await model({ turns: p.turns, usage: { input: 1500, output: 40 } });
    const t0 = Date.now();
    const r = await execPipeline(f, await writePipeline(f, agentPipeline({ preset: p.preset, server, secret: p.secret })), SWARM, { env: p.env });
    console.log(`${p.preset} on the swarm: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.equal(r.code, 0, r.stderr);
    const step = r.json.steps.implement;
    assert.equal(step.status, 'completed', JSON.stringify(step));
    assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from a worker');
    assert.equal(commitsOn(f.project, r.json.branch, r.json.baseSha)[0]!.subject, 'step/implement (coder): Wrote hello.txt and probed.');
    assert.equal(git(f.project, 'show', `${r.json.branch}:denied.txt`), '403', 'its gateway refused the denied host');
    assert.notEqual(git(f.project, 'show', `${r.json.branch}:dns.txt`), '0', 'no name resolves in the step');
    // metered by its gateway on the manager: what the model reported, call by call
    const seen = server.reportedUsage();
    assert.equal(step.usage.inputTokens, seen.input);
    assert.equal(step.usage.outputTokens, seen.output);
    assert.equal(step.usage.calls, seen.calls);
    assert.ok(seen.calls >= 3);
    assert.ok(step.usage.costUsd > 0, 'priced from the table');
    const rec = record(f, r.json.runId);
    assert.deepEqual(rec.steps[0].usage, step.usage);
    assert.match(rec.steps[0].node, /^lab-w\d$/, 'it ran on a worker');
    assert.deepEqual(events(f, r.json.runId).filter((e) => e.message === 'egress_refused').map((e) => e.host), ['denied.example'], 'one refusal, the denied host (no call home refused)');
    const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.log'), 'utf8');
    assert.match(log, /runner gateway: refused denied\.example/);
    // the model saw the real key, the step only its placeholder
    const key = Object.values(p.env)[0]!;
    for (const q of server.requests) assert.ok(JSON.stringify(q.headers).includes(key), `request ${q.path} carried the key`);
    assert.doesNotMatch(log, new RegExp(key));
    assert.equal(services(), '', 'no service left');
  });
}

/** Every process of a container (by its first one's PID namespace, seen from this machine: the workers share its PIDs). */
function processesOf(pid: number): number[] {
  const ns = readlinkSync(`/proc/${pid}/ns/pid`);
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((p) => {
      try {
        return readlinkSync(`/proc/${p}/ns/pid`) === ns;
      } catch {
        return false;
      }
    });
}

test('the key never reaches the worker: the service, its secrets and configs, the task\'s container on its node, its processes and /run/secrets never hold it', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await model({
    turns: [
      { tool: { name: 'Bash', input: { command: 'sleep 8; echo slept > slept.txt', description: 'take a while' } } },
      { text: 'Slept.' },
    ],
    usage: { input: 1000, output: 20 },
  });
  const file = await writePipeline(f, agentPipeline({ preset: 'claude-code', server, secret: 'ANTHROPIC_API_KEY' }));
  const forms = [ANTHROPIC_KEY, ANTHROPIC_KEY.slice(-24)];
  const label = `label=dev.runner.home=${f.home}`;
  const views = [
    { engine: [] as string[], list: ['service', 'ls'], inspect: ['service', 'inspect'] },
    { engine: [], list: ['secret', 'ls'], inspect: ['secret', 'inspect'] },
    { engine: [], list: ['config', 'ls'], inspect: ['config', 'inspect'] },
    ...[[], ...WORKERS.map(onWorker)].map((engine) => ({ engine, list: ['ps', '-a'], inspect: ['container', 'inspect'] })),
  ];
  const seen = new Set<string>();
  const found = new Set<string>();
  let placeholders = 0;
  let stopped = false;
  const watching = (async () => {
    while (!stopped) {
      for (const v of views) {
        const ids = (await run('docker', [...v.engine, ...v.list, '-q', '--filter', label]).catch(() => ({ stdout: '' }))).stdout.split('\n').filter(Boolean);
        if (!ids.length) continue;
        const out = (await run('docker', [...v.engine, ...v.inspect, ...ids]).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }))).stdout;
        const where = `${v.inspect.join(' ')} ${v.engine.join(' ') || 'on the manager'}`;
        ids.forEach((id) => seen.add(`${where} ${id}`));
        if (forms.some((k) => out.includes(k))) found.add(`${where} shows it`);
        if (!v.engine.length || v.list[0] !== 'ps') continue;
        // on a worker: what its processes hold in their environment and command lines, and the files it was handed
        for (const c of JSON.parse(out || '[]') as Array<{ State: { Pid: number; Running: boolean } }>) {
          if (!c.State.Running || !c.State.Pid) continue;
          try {
            for (const p of processesOf(c.State.Pid)) {
              for (const what of ['environ', 'cmdline']) {
                const text = readFileSync(`/proc/${p}/${what}`, 'latin1');
                if (text.includes('runner-gateway-placeholder')) placeholders++;
                if (forms.some((k) => text.includes(k))) found.add(`/proc/${p}/${what} of a task's process on a worker holds it`);
              }
            }
            // the files it has: the workspace, the CLI's settings, the wrapper's, what the engine handed in
            const root = `/proc/${c.State.Pid}/root`;
            const held = await run('grep', ['-rlsF', ANTHROPIC_KEY, ...['home', 'tmp', 'run', 'etc', 'root'].map((d) => `${root}/${d}`)]).then((o) => o.stdout, (e: { stdout?: string }) => e.stdout ?? ''); // grep: 1 none found, 2 an unreadable path
            if (held.trim()) found.add(`files on a worker hold it: ${held.trim()}`);
            const secrets = `${root}/run/secrets`;
            for (const name of readdirSync(secrets, { recursive: true }) as string[]) {
              seen.add(`file /run/secrets/${name}`);
              let text = '';
              try {
                text = readFileSync(path.join(secrets, name), 'latin1');
              } catch {
                continue; // a directory
              }
              if (forms.some((k) => text.includes(k))) found.add(`/run/secrets/${name} on a worker holds it`);
            }
          } catch {
            // the task ended meanwhile
          }
        }
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  const t0 = Date.now();
  const r = await execPipeline(f, file, SWARM, { env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY } });
  console.log(`the key test's run: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  stopped = true;
  await watching;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(git(f.project, 'show', `${r.json.branch}:slept.txt`), 'slept');
  assert.match(record(f, r.json.runId).steps[0].node, /^lab-w\d$/);
  for (const k of ['service inspect', 'file /run/secrets/runner-transfer']) assert.ok([...seen].some((s) => s.startsWith(k)), `${k} was looked at (${[...seen].join(', ')})`);
  assert.ok([...seen].some((s) => /container inspect -H unix:\/\/\/run\/runner-swarm-lab\/lab-w\d/.test(s)), 'the task\'s container was inspected on its node');
  assert.ok(placeholders > 0, 'the processes read are the agent\'s (they hold the placeholder)');
  assert.deepEqual([...found], []);
  for (const q of server.requests) assert.equal(q.headers['x-api-key'], ANTHROPIC_KEY, 'the model saw the real key');
});

test('runner exec --engine swarm --warm 2: an agent step on a worker behind a warm gateway (made ahead on the manager, on an overlay of its own): its workspace relayed, a denied host refused, the key on the manager only, nothing of the pool left', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const p = presets[0]!;
  const server = await model({ turns: p.turns, usage: { input: 1500, output: 40 } });
  // then a step without a way out: its relay (to the runner's transfer) is a warm gateway too
  const check = `  - id: check\n    image: runner/base:latest\n    network: none\n    placement: ["node.role == worker"]\n    run: cat hello.txt > seen.txt\n`;
  const r = await execPipeline(f, await writePipeline(f, agentPipeline({ preset: p.preset, server, secret: p.secret, step: check })), [...SWARM, '--warm', '2'], { env: p.env });
  assert.equal(r.code, 0, r.stderr);
  const step = r.json.steps.implement;
  assert.equal(step.status, 'completed', JSON.stringify(step));
  assert.match(record(f, r.json.runId).steps[0].node, /^lab-w\d$/, 'it ran on a worker');
  const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.log'), 'utf8');
  assert.match(log, /runner: gateway: a warm one, made ahead for no step in particular and given to this one alone/, log);
  // the workspace came and went through the warm gateway's relay: the work is committed
  assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from a worker');
  assert.equal(git(f.project, 'show', `${r.json.branch}:denied.txt`), '403', 'the warm gateway refused the denied host');
  assert.notEqual(git(f.project, 'show', `${r.json.branch}:dns.txt`), '0', 'no name resolves in the step');
  assert.equal(step.usage.calls, server.reportedUsage().calls, 'metered by the warm gateway');
  assert.equal(r.json.steps.check.status, 'completed', JSON.stringify(r.json.steps.check));
  assert.equal(git(f.project, 'show', `${r.json.branch}:seen.txt`), 'hello from a worker', 'the relayed step had the agent\'s work');
  const checkLog = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'check.log'), 'utf8');
  assert.match(checkLog, /runner: relay: a warm gateway, made ahead for no step in particular and given to this one alone \(--warm\), allowing nothing/, checkLog);
  for (const q of server.requests) assert.ok(JSON.stringify(q.headers).includes(ANTHROPIC_KEY), `request ${q.path} carried the key`);
  assert.doesNotMatch(log, new RegExp(ANTHROPIC_KEY));
  // the pool's gateways and their overlays went with the command; no service is left
  const label = `label=dev.runner.home=${f.home}`;
  assert.equal(execFileSync('docker', ['ps', '-aq', '--filter', label], { encoding: 'utf8' }).trim(), '', 'no container of the home is left on the manager');
  // a swarm removes an overlay from its store at once, and from the manager's own engine a few seconds later
  const overlays = () => execFileSync('docker', ['network', 'ls', '--filter', label, '--format', '{{.Name}}'], { encoding: 'utf8' }).trim();
  for (let i = 0; i < 60 && overlays(); i++) await new Promise((r) => setTimeout(r, 250));
  assert.equal(overlays(), '', 'no overlay of the home is left');
  assert.equal(services(), '', 'no service left');
});

test('a budget on a worker: the call past it is refused, the step ends budget_exhausted with its work committed', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await model({
    turns: Array.from({ length: 6 }, (_, i) => ({ tool: { name: 'Bash', input: { command: `echo ${i} > step-${i}.txt`, description: `file ${i}` } } })),
    usage: { input: 1500, output: 40 },
  });
  const r = await execPipeline(f, await writePipeline(f, agentPipeline({ preset: 'claude-code', server, secret: 'ANTHROPIC_API_KEY', extra: '    budget: { tokens: 1000 }\n' })), SWARM, {
    env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY },
  });
  assert.equal(r.code, 1, r.stderr);
  const step = r.json.steps.implement;
  assert.equal(step.status, 'budget_exhausted', JSON.stringify(step));
  assert.match(step.message, /budget exhausted/);
  const all = calls(f, r.json.runId);
  const refused = all.filter((c) => c.refused === 'budget');
  assert.ok(refused.length >= 1, 'a call was refused');
  assert.equal(all.indexOf(refused[0]), 1, 'the second call: the first crossed the budget');
  assert.equal(server.requests.length, all.length - refused.length, 'the model never saw a refused call');
  assert.equal(step.usage.inputTokens, server.reportedUsage().input);
  assert.match(record(f, r.json.runId).steps[0].node, /^lab-w\d$/);
  assert.match(readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.log'), 'utf8'), /runner gateway: model call refused: the budget is spent/);
  assert.equal(services(), '');
});

/** The run's containers on each worker: all, and those running. */
function onWorkers(runId: string): { all: string[]; running: string[] } {
  const ps = (extra: string[]) =>
    WORKERS.flatMap((w) => execFileSync('docker', [...onWorker(w), 'ps', ...extra, '--filter', `label=dev.runner.run-id=${runId}`, '--format', `${w} {{.Names}} {{.Status}}`], { encoding: 'utf8' }).split('\n').filter(Boolean));
  return { all: ps(['-a']), running: ps([]) };
}

/** Waits until no container of the run is on a worker, running or not (at most `ms`): how long it took, or null. */
async function goneFromWorkers(runId: string, ms = 20_000): Promise<number | null> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (!onWorkers(runId).all.length) return Date.now() - t0;
    await new Promise((r) => setTimeout(r, 250));
  }
  return null;
}

/** The step's service of a run, once its task runs: its node's hostname. */
async function runningOn(home: string): Promise<string> {
  for (let i = 0; i < 240; i++) {
    const out = execFileSync('docker', ['service', 'ls', '--filter', `label=dev.runner.home=${home}`, '--format', '{{.Name}}'], { encoding: 'utf8' }).trim();
    if (out) {
      const ps = execFileSync('docker', ['service', 'ps', out.split('\n')[0]!, '--format', '{{.Node}} {{.CurrentState}}'], { encoding: 'utf8' }).trim();
      const m = /^(\S+) Running/m.exec(ps);
      if (m) return m[1]!;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('no step of the run came to run');
}

const sleeper = (extra: string) => `version: 1
name: sleeper
project: { path: project, push: never }
steps:
  - id: sleep
    image: runner/base:latest
    placement: ["node.role == worker"]
    resources: { memory: 64m, cpus: 0.2, pids: 64 }
${extra}    run: sleep 600
`;

test('a timed-out step (behind a gateway) and a canceled one leave no container of the run on any worker, nor its gateway on the manager', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const r = await execPipeline(f, await writePipeline(f, sleeper('    timeout: 5s\n    egress: [example.org]\n')), SWARM);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.sleep.status, 'timed_out');
  assert.match(record(f, r.json.runId).steps[0].node, /^lab-w\d$/, 'a timed-out step says where it ran');
  assert.deepEqual(onWorkers(r.json.runId).running, [], 'none runs once the run has ended');
  const timedOut = await goneFromWorkers(r.json.runId);
  console.log(`timeout: no container of the run on a worker ${timedOut} ms after the run ended`);
  assert.notEqual(timedOut, null, `a container of the timed-out step is still on a worker: ${onWorkers(r.json.runId).all.join('; ')}`);
  assert.equal(services(), '');
  assert.equal(execFileSync('docker', ['ps', '-aq', '--filter', `label=dev.runner.run-id=${r.json.runId}`], { encoding: 'utf8' }).trim(), '', 'its gateway is gone from the manager');
  assert.equal(execFileSync('docker', ['network', 'ls', '-q', '--filter', `label=dev.runner.run-id=${r.json.runId}`], { encoding: 'utf8' }).trim(), '', 'and its overlay');

  const g = await fixture({ owner: 1000 });
  let child: ChildProcess | undefined;
  const canceled = execPipeline(g, await writePipeline(g, sleeper('    timeout: 5m\n')), SWARM, { onSpawn: (c) => (child = c) });
  await runningOn(g.home);
  child!.kill('SIGTERM');
  const c = await canceled;
  assert.notEqual(c.code, 0, c.stderr);
  const runId = c.json?.runId ?? /run (\S+)/.exec(c.stderr)?.[1];
  assert.ok(runId, c.stderr);
  assert.equal(record(g, runId).steps[0].status, 'canceled');
  assert.match(record(g, runId).steps[0].node, /^lab-w\d$/, 'a canceled step says where it ran');
  assert.deepEqual(onWorkers(runId).running, [], 'none runs once the run has ended');
  const cancelDone = await goneFromWorkers(runId);
  console.log(`cancel: no container of the run on a worker ${cancelDone} ms after the run ended`);
  assert.notEqual(cancelDone, null, `a container of the canceled step is still on a worker: ${onWorkers(runId).all.join('; ')}`);
  assert.equal(services(), '');
});

test('the README\'s implement-review runs on the swarm unchanged (its project and the scripted model aside): six agent commits in order, verified', { timeout: 300_000 }, async () => {
  const f = await fixture();
  // the project make demo-agent makes (scripts/demo-agent-repo.sh): a task and a failing test
  await writeFile(path.join(f.project, 'TASK.md'), '# Task\n\nAdd `greet.js`, a module that exports `greet(name)`, returning `hello, <name>`.\n`npm test` must pass.\n');
  await writeFile(path.join(f.project, 'package.json'), '{ "name": "agent-demo", "version": "1.0.0", "private": true, "scripts": { "test": "node test.js" } }\n');
  await writeFile(path.join(f.project, 'test.js'), "const assert = require('node:assert');\nconst { greet } = require('./greet');\nassert.strictEqual(greet('world'), 'hello, world');\nconsole.log('greet: ok');\n");
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=demo', '-c', 'user.email=demo@localhost', 'commit', '-q', '-m', 'a task and a failing test');
  git(f.project, 'push', '-q', 'origin', 'main');
  // The review step's `git diff "$RUNNER_BASE_SHA"` works on a worker as locally: its workspace travels with a .git
  // of the branch down to the base (docs/scale-out.md; swarm.test.ts checks what a step's git answers there).
  const server = await model(IMPLEMENT_REVIEW);
  // as scripts/demo-agent.mjs changes it: the project's path, and base_url for the scripted model
  const original = readFileSync(path.join(REPO, 'pipelines/implement-review.yaml'), 'utf8');
  const text = original.replace('path: ../.demo/agent-project', 'path: project').replace(/^( +)use: claude-code.*$/gm, (line, indent) => `${line}\n${indent}base_url: ${server.url}`);
  assert.notEqual(text, original);
  const t0 = Date.now();
  const r = await execPipeline(f, await writePipeline(f, text), SWARM, { env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY } });
  console.log(`implement-review on the swarm: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  assert.equal(r.code, 0, r.stderr);
  const subjects = commitsOn(f.project, r.json.branch, r.json.baseSha).map((c) => c.subject).reverse();
  assert.deepEqual(subjects, IMPLEMENT_REVIEW_COMMITS);
  assert.match(git(f.project, 'show', `${r.json.branch}:REVIEW.md`), /APPROVED/);
  assert.match(git(f.project, 'show', `${r.json.branch}:test.js`), /greet\('ada'\)/);
  const rec = record(f, r.json.runId);
  assert.equal(rec.steps.find((s: { id: string }) => s.id === 'test').status, 'completed', 'the verify step passed');
  for (const s of rec.steps) assert.ok(s.node, `step ${s.id} says on which node it ran`);
  console.log(`implement-review nodes: ${rec.steps.map((s: { id: string; node: string }) => `${s.id}@${s.node}`).join(' ')}`);
  assert.equal(services(), '');
});

// Last: it kills a worker's engine, which only the lab's `down` clears.
// Warm gateways on the swarm, attacked (helper atkswarm): a runner killed with -9 leaves its warm gateways
// (containers on the manager, on overlays of their own); whatever the next runner of the home is (a `runner serve
// --engine swarm` without --warm, whose recovery asks the manager; a `runner runs ls`, whose recovery asks this
// machine's engine), it removes them and their overlays. A network: none step's warm relay allows nothing.
const serves: ServeProcess[] = [];
after(() => {
  for (const s of serves) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
});

const label = (f: Fixture) => `label=dev.runner.home=${f.home}`;
/** the home's containers on the manager (warm gateways among them) */
const containers = (f: Fixture) => execFileSync('docker', ['ps', '-aq', '--filter', label(f)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
const overlays = (f: Fixture) => execFileSync('docker', ['network', 'ls', '--filter', label(f), '--format', '{{.Name}}'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
const warmOnes = (f: Fixture) => execFileSync('docker', ['ps', '-q', '--filter', label(f), '--filter', 'label=dev.runner.warm-owner'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);

/** `runner serve --engine swarm ARGS` on the fixture's home, listening (its recovery done) */
async function serveOn(f: Fixture, args: string[], files: Record<string, string> = {}): Promise<ServeProcess & { base: string }> {
  const dir = path.join(f.root, 'pipelines');
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  const s = spawnServe(['--engine', 'swarm', '--pipelines', dir, '--home', f.home, '--grace', '2s', '--listen', '127.0.0.1:0', ...args]);
  serves.push(s);
  const m = await s.waitFor(/listening on (http:\/\/\S+)/, 60_000);
  return Object.assign(s, { base: m[1]!.replace('0.0.0.0', '127.0.0.1') });
}

/** A `runner serve --engine swarm --warm 2` killed with -9 once its two gateways are warm: what it left. */
async function killedWarmServe(f: Fixture): Promise<void> {
  const s = await serveOn(f, ['--warm', '2']);
  await until('two warm gateways on the manager', async () => (warmOnes(f).length === 2 ? true : undefined), 90_000);
  s.child.kill('SIGKILL');
  await s.exited;
  assert.equal(warmOnes(f).length, 2, 'the killed server left its warm gateways');
  assert.ok(overlays(f).length >= 2, `and their overlays: ${overlays(f).join(' ')}`);
}

async function noneLeft(f: Fixture): Promise<void> {
  assert.deepEqual(containers(f), [], 'no container of the home is left on the manager');
  // a swarm removes an overlay from its store at once, and from the manager's own engine a few seconds later
  for (let i = 0; i < 60 && overlays(f).length; i++) await new Promise((r) => setTimeout(r, 250));
  assert.deepEqual(overlays(f), [], 'no overlay of the home is left');
}

test('runner serve --engine swarm --warm 2 killed with -9: the next runner serve --engine swarm of the home (without --warm) removes its warm gateways and their overlays', { timeout: 240_000 }, async () => {
  const f = await fixture();
  await killedWarmServe(f);
  const next = await serveOn(f, []);
  try {
    await noneLeft(f);
  } finally {
    next.child.kill('SIGTERM');
    await next.exited;
    // what this test's own attack left is not left for the next test
    await runCli(['runs', 'ls', '--home', f.home]);
  }
});

test('runner serve --engine swarm --warm 2 killed with -9: the next `runner runs ls` of the home removes its warm gateways and their overlays', { timeout: 240_000 }, async () => {
  const f = await fixture();
  await killedWarmServe(f);
  const r = await runCli(['runs', 'ls', '--home', f.home]);
  assert.equal(r.code, 0, r.stderr);
  await noneLeft(f);
});

test('runner runs ls while a runner serve --engine swarm --warm 2 run is on a worker: its recovery leaves the live step (and the warm gateways) alone; the run succeeds', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const pipeline = `version: 1
name: slow
project: { path: ${f.project}, push: never }
steps:
  - id: slow
    image: runner/base:latest
    egress: [allowed.example]
    placement: ["node.role == worker"]
    timeout: 2m
    run: sleep 8; echo done > done.txt
`;
  const s = await serveOn(f, ['--warm', '2'], { 'slow.yaml': pipeline });
  try {
    await until('two warm gateways on the manager', async () => (warmOnes(f).length === 2 ? true : undefined), 90_000);
    const res = await fetch(`${s.base}/api/pipelines/slow/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 202, await res.clone().text());
    const { runId } = (await res.json()) as { runId: string };
    await until('the step\'s service', async () => (services() ? true : undefined), 60_000);
    // a command of the same home, its recovery run while the step is on a worker (it once removed every service of the home)
    const ls = await runCli(['runs', 'ls', '--home', f.home]);
    assert.equal(ls.code, 0, ls.stderr);
    assert.doesNotMatch(ls.stderr, /removed \d+ container/, ls.stderr);
    const end = await until('the run\'s end', async () => {
      const run = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { status: string; error?: { message: string } };
      return ['queued', 'starting', 'running'].includes(run.status) ? undefined : run;
    }, 120_000);
    assert.equal(end.status, 'succeeded', JSON.stringify(end));
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});

/** A raw HTTP request from a step (runner/base has bash, not curl): its status line, or `unreached`. */
const ask = (port: number | string, request: string, file: string) =>
  `timeout 5 bash -c 'exec 3<>/dev/tcp/'"$GW"'/${port}; printf "${request}" >&3; head -n 1 <&3' 2>/dev/null | tr -d '\\r' > ${file}; [ -s ${file} ] || echo unreached > ${file}`;

test('runner exec --engine swarm --warm 2, a network: none step on a worker: its warm relay allows nothing (its proxy refuses every host, the runner\'s own address too, and it has no model route); nothing of the pool is left', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const host = execFileSync('docker', ['info', '-f', '{{.Swarm.NodeAddr}}'], { encoding: 'utf8' }).trim();
  const seen: string[] = [];
  const listener = net.createServer((s) => {
    seen.push(s.remoteAddress ?? '?');
    s.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
  });
  await new Promise<void>((r) => listener.listen(0, '0.0.0.0', r));
  const port = (listener.address() as net.AddressInfo).port;
  const script = [
    // its relay: the one neighbour on its network (it fetched its workspace through it)
    `GW=$(awk 'NR > 1 {print $1; exit}' /proc/net/arp)`,
    'echo "$GW" > gw.txt',
    ask(3128, 'GET http://denied.example/ HTTP/1.1\\r\\nHost: denied.example\\r\\nConnection: close\\r\\n\\r\\n', 'proxy.txt'),
    ask(3128, `CONNECT ${host}:${port} HTTP/1.1\\r\\nHost: ${host}:${port}\\r\\n\\r\\n`, 'connect.txt'),
    ask(3128, `GET http://${host}:${port}/ HTTP/1.1\\r\\nHost: ${host}:${port}\\r\\nConnection: close\\r\\n\\r\\n`, 'plain.txt'),
    ask(3128, 'POST /v1/messages HTTP/1.1\\r\\nHost: api.anthropic.com\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n{}', 'model.txt'),
  ].join('\n');
  try {
    const file = await writePipeline(f, `version: 1
name: relayed
project: { path: project, push: never }
defaults: { image: runner/base:latest, resources: { memory: 64m, cpus: 0.2, pids: 64 }, timeout: 2m }
steps:
  - id: closed
    network: none
    placement: ["node.role == worker"]
    run: ${JSON.stringify(script)}
`);
    const r = await execPipeline(f, file, ['--engine', 'swarm', '--warm', '2']);
    assert.equal(r.code, 0, r.stderr);
    const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'closed.log'), 'utf8');
    assert.match(log, /runner: relay: a warm gateway/, log);
    const out = (name: string) => git(f.project, 'show', `${r.json.branch}:${name}`);
    assert.match(out('gw.txt'), /^\d+\.\d+\.\d+\.\d+$/, 'the step has its relay as its name server');
    assert.match(out('proxy.txt'), /^HTTP\/1\.1 403/, `a host through the relay's proxy: ${out('proxy.txt')}`);
    assert.match(out('connect.txt'), /^HTTP\/1\.1 403/, `a tunnel to the runner's machine: ${out('connect.txt')}`);
    assert.match(out('plain.txt'), /^HTTP\/1\.1 403/, `a plain request to the runner's machine: ${out('plain.txt')}`);
    assert.match(out('model.txt'), /^HTTP\/1\.1 404/, `the model route: ${out('model.txt')}`);
    assert.deepEqual(seen, [], 'nothing reached the runner\'s machine past the relay');
    await noneLeft(f);
  } finally {
    listener.close();
  }
});

test('a worker lost during an agent step: node_lost with its metered calls, the retry completes on the other node, the run\'s cost counts both', { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  // the first call is answered; the second is held (a slow model) while the worker goes; the retry gets the rest
  const server = await model({
    turns: [
      { tool: { name: 'Write', input: { file_path: `${WS}/first.txt`, content: 'first attempt\n' } } },
      { tool: { name: 'Write', input: { file_path: `${WS}/never.txt`, content: 'never\n' } } },
      { tool: { name: 'Write', input: { file_path: `${WS}/second.txt`, content: 'second attempt\n' } } },
      { text: 'Wrote second.txt.' },
    ],
    pause: { after: 1, ms: 600_000 },
    usage: { input: 1000, output: 40 },
  });
  const file = await writePipeline(f, agentPipeline({ preset: 'claude-code', server, secret: 'ANTHROPIC_API_KEY', step: '    retries: { max: 1, backoff: 1s }\n' }));
  const t0 = Date.now();
  const running = execPipeline(f, file, SWARM, { env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY } });
  const node = await runningOn(f.home);
  while (!server.requests.some((q) => q.answer === 'paused')) {
    assert.ok(Date.now() - t0 < 120_000, 'the agent came to its second call');
    await new Promise((r) => setTimeout(r, 200));
  }
  const metered = server.reportedUsage();
  const lostAt = Date.now();
  execFileSync('sh', ['-c', `kill -9 "$(cat /run/runner-swarm-lab/${node}.pid)"`]);
  const r: CliResult = await running;
  console.log(`node_lost with an agent: run took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  assert.equal(r.code, 0, r.stderr);
  const rec = record(f, r.json.runId);
  const [first, second] = rec.steps;
  assert.equal(first.status, 'node_lost', JSON.stringify(first));
  assert.equal(first.node, node);
  console.log(`node_lost: step ended ${((Date.parse(first.finishedAt) - lostAt) / 1000).toFixed(1)} s after its worker's engine was killed`);
  assert.ok(first.usage, `the lost attempt's metered calls are in its record: ${JSON.stringify(first)}`);
  // its gateway (on the manager) metered the answered call, and charged the held one, cut when the node went, its worst case
  type Call = { step: string; inputTokens: number; outputTokens: number; costUsd: number; status: number; worstCase?: boolean };
  const lines = calls(f, r.json.runId) as Call[];
  const of = (step: string) => lines.filter((c) => c.step === step);
  const sum = (cs: Call[], k: 'inputTokens' | 'outputTokens' | 'costUsd') => cs.reduce((n, c) => n + c[k], 0);
  const lost = of('implement');
  assert.deepEqual(lost.map((c) => [c.status, c.inputTokens, !!c.worstCase]), [[200, metered.input, false], [0, lost[1]?.inputTokens, true]], JSON.stringify(lost));
  assert.equal(first.usage.calls, 2);
  assert.equal(first.usage.inputTokens, sum(lost, 'inputTokens'));
  assert.equal(first.usage.outputTokens, sum(lost, 'outputTokens'));
  assert.ok(Math.abs(first.usage.costUsd - sum(lost, 'costUsd')) < 1e-9);
  assert.ok(first.usage.costUsd > 0);
  assert.equal(second.status, 'completed', JSON.stringify(second));
  assert.notEqual(second.node, node, 'the retry ran on the other node');
  assert.match(second.node, /^lab-w\d$/);
  assert.equal(git(f.project, 'show', `${r.json.branch}:second.txt`), 'second attempt');
  // the retry's usage is its own calls; every token the model reported is in calls.jsonl
  const retried = of('implement#2');
  assert.equal(second.usage.inputTokens, sum(retried, 'inputTokens'));
  assert.equal(sum(lines.filter((c) => !c.worstCase), 'inputTokens'), server.reportedUsage().input);
  const ls = await runCli(['runs', 'ls', '--json', '--home', f.home]);
  assert.equal(ls.code, 0, ls.stderr);
  const listed = (JSON.parse(ls.stdout) as Array<{ runId: string; costUsd: number }>).find((x) => x.runId === r.json.runId)!;
  assert.ok(Math.abs(listed.costUsd - (first.usage.costUsd + second.usage.costUsd)) < 1e-9, `the run's cost ${listed.costUsd} counts both attempts`);
  assert.equal(services(), '');
});
