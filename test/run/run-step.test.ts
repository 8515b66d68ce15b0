/**
 * How one step ends, and what it reports, through the real orchestrator on a
 * fake engine (test/fixtures/fake-engine.ts): timeouts, OOM, limits, cancel and
 * kill, output drained before its container goes, an image that cannot take
 * secrets, and a step behind its gateway (its calls metered, its budgets).
 * What only the kernel can show (that the limits bite) is in test/integration.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { GATEWAY_IMAGE } from '../../src/gateway/host/image.js';
import { assertLeftNothing, coreProjects, FakeEngine, onBranch, pipeline, runCommits, runOn, type RunControls } from '../fixtures/core-run.js';
import { git } from '../fixtures/project.js';
import { fakeGateway, type FakeProcess } from '../fixtures/fake-engine.js';
import { CopyTransport } from '../fixtures/fake-transport.js';

const project = coreProjects();

test('a step past its timeout is stopped and reported as timed out, its work committed', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: slow\n    run: slow\n    timeout: 300ms\n  - id: next\n    run: next');
  const engine = new FakeEngine().step('slow', async (p) => {
    await p.write('partial.txt', 'some of it\n');
    await p.untilStopped();
  });
  const { record } = await runOn(engine, f, file);
  const [slow, next] = record.steps;
  assert.equal(record.status, 'failed');
  assert.equal(slow!.status, 'timed_out');
  assert.equal(slow!.timedOut, true);
  assert.deepEqual(slow!.limits, ['timeout']);
  assert.match(slow!.message ?? '', /^timed out: stopped at its timeout of \d+s \(raise timeout\)/);
  assert.equal(next!.status, 'skipped');
  // stopped politely: SIGTERM, and it ended of it (143) without a kill
  assert.equal(engine.entries('term', 'slow').length, 1);
  assert.equal(engine.entries('kill', 'slow').length, 0);
  assert.equal(slow!.exitCode, 143);
  const [c] = runCommits(f, record);
  assert.equal(c!.subject, 'step/slow (runner/base:latest): timed out');
  assert.match(c!.body, /Runner-Status: timed out\nRunner-Limit: timed out: stopped at its timeout/);
  assert.equal(onBranch(f, record, 'partial.txt'), 'some of it');
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test('a step that ignores SIGTERM is killed once the grace period is over', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: stubborn\n    run: stubborn\n    timeout: 200ms');
  const engine = new FakeEngine().step('stubborn', async (p) => {
    p.ignoreTerm();
    await p.write('x.txt', 'x\n');
    await p.untilStopped();
  });
  const { record } = await runOn(engine, f, file, { graceSeconds: 0.2 });
  assert.equal(record.steps[0]!.status, 'timed_out');
  assert.equal(record.steps[0]!.exitCode, 137);
  const ops = engine.journal.filter((e) => e.step === 'stubborn').map((e) => e.op + (e.why ? `:${e.why}` : ''));
  assert.deepEqual(ops, ['create', 'start', 'begin', 'term', 'kill:grace', 'exit', 'remove']);
  assert.equal(onBranch(f, record, 'x.txt'), 'x');
});

test('a step killed at its memory limit is reported as oom, its work committed', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: hungry\n    run: hungry');
  const engine = new FakeEngine().step('hungry', async (p) => {
    await p.write('before-oom.txt', 'written\n');
    await p.oom();
  });
  const { record } = await runOn(engine, f, file);
  const s = record.steps[0]!;
  assert.equal(record.status, 'failed');
  assert.equal(s.status, 'oom');
  assert.equal(s.oomKilled, true);
  assert.deepEqual(s.limits, ['memory']);
  assert.equal(s.message, 'oom: killed at its memory limit of 256m (raise resources.memory)');
  const [c] = runCommits(f, record);
  assert.equal(c!.subject, 'step/hungry (runner/base:latest): oom');
  assert.match(c!.body, /Runner-Limit: oom: killed at its memory limit of 256m/);
  assert.deepEqual(c!.files, ['before-oom.txt']);
});

test('forks refused at the pids limit and a write past the file size limit are each reported as that limit', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: forks\n    run: forks\n    continue_on_error: true\n  - id: big\n    run: big\n    continue_on_error: true');
  const engine = new FakeEngine()
    .step('forks', async (p) => {
      p.pidsRefused(4);
      // it runs on until the runner has read the cgroup's count (as a real one is read while it lives)
      while (p.container.pidsReads === 0) await p.sleep(5);
    })
    // 128 + SIGXFSZ: its main process died writing past RLIMIT_FSIZE
    .step('big', () => 153);
  const { record } = await runOn(engine, f, file);
  const [forks, big] = record.steps;
  assert.deepEqual([forks!.status, forks!.limits], ['completed', ['pids']]);
  assert.match(forks!.message ?? '', /^pids limit reached: forks were refused at 128 processes/);
  assert.deepEqual([big!.status, big!.limits], ['failed', ['file_size']]);
  assert.match(big!.message ?? '', /^file size limit reached: a write past 1\.0 GiB|^file size limit reached/);
});

test("a step's output is all in its log before its container is removed, however slow the console", async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: chatty\n    run: chatty');
  const lines = 1000;
  const engine = new FakeEngine().step('chatty', (p) => {
    // printed in one go, then the process exits: the console is far behind
    for (let i = 0; i < lines; i++) (i % 2 ? p.stderr : p.stdout).call(p, `line ${i}\n`);
    return 0;
  });
  let n = 0;
  const { record, reporter } = await runOn(engine, f, file, {
    controls: (c) => (c.reporter.slow = () => (++n % 25 === 0 ? new Promise((r) => setTimeout(r, 1)) : undefined)),
  });
  assert.equal(record.status, 'succeeded');
  const got = reporter.linesOf('chatty');
  assert.equal(got.length, lines);
  assert.deepEqual(new Set(got).size, lines);
  const log = (await readFile(path.join(f.home, 'runs', record.runId, 'steps', 'chatty.log'), 'utf8')).trim().split('\n');
  assert.equal(log.length, lines);
  // the engine was asked to remove it only once all of it was read
  assert.equal(engine.entries('remove', 'chatty')[0]!.dropped, 0);
  assert.ok(engine.entries('exit', 'chatty')[0]!.seq < engine.entries('remove', 'chatty')[0]!.seq);
});

test('an image without a shell cannot take secrets: the step is not started, said, and the run fails', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: s\n    run: s\n    image: example.org/distroless:1\n    secrets: [TOKEN]', 'secrets: [TOKEN]');
  const engine = new FakeEngine({ images: { 'example.org/distroless:1': { shell: false } } }).step('s', () => assert.fail('must not run'));
  const { record } = await runOn(engine, f, file, { secrets: { TOKEN: 'secret-value-123' } });
  assert.equal(record.status, 'failed');
  assert.equal(record.steps[0]!.status, 'failed');
  assert.equal(record.steps[0]!.error, 'step_not_started');
  assert.match(record.steps[0]!.message ?? '', /^not started: image example\.org\/distroless:1 has no \/bin\/sh/);
  assert.equal(engine.entries('start').length, 0);
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

/** A step that keeps working until its container is stopped, trapping SIGTERM to save what it has. */
function cancelable(ctl: () => RunControls, onTerm: (p: FakeProcess) => Promise<void>) {
  return async (p: FakeProcess) => {
    await p.write('progress.txt', 'half\n');
    p.onTerm(async () => {
      await onTerm(p);
      return 0;
    });
    ctl().cancel.abort();
    await p.untilStopped();
  };
}

test('a polite cancel stops the step, commits its work, skips the rest, and ends canceled, unpushed, with nothing left', async () => {
  const f = await project({ remote: true });
  const file = await pipeline(f, '  - id: work\n    run: work\n  - id: after\n    run: after');
  let controls!: RunControls;
  const engine = new FakeEngine()
    .step('work', cancelable(() => controls, (p) => p.write('saved-on-term.txt', 'saved\n')))
    .step('after', () => assert.fail('must not run'));
  const { record } = await runOn(engine, f, file, { controls: (c) => (controls = c) });
  assert.equal(record.status, 'canceled');
  assert.deepEqual(record.steps.map((s) => [s.id, s.status]), [['work', 'canceled'], ['after', 'skipped']]);
  const [c] = runCommits(f, record);
  assert.equal(c!.subject, 'step/work (runner/base:latest): canceled');
  assert.deepEqual(c!.files.sort(), ['progress.txt', 'saved-on-term.txt']);
  // stopped with SIGTERM, never killed; the branch stays here
  assert.deepEqual(engine.entries('kill', 'work'), []);
  assert.equal(engine.entries('term', 'work').length, 1);
  assert.notEqual(record.pushed, true);
  assert.equal(git(f.remote, 'branch', '--list', 'run/*'), '');
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test('an impatient cancel kills the step at once, whatever its grace period', { timeout: 300_000 }, async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: work\n    run: work');
  let controls!: RunControls;
  const engine = new FakeEngine().step('work', async (p) => {
    p.ignoreTerm();
    await p.write('progress.txt', 'half\n');
    controls.cancel.abort();
    // the second Ctrl-C comes once the first's SIGTERM was ignored
    while (p.container.terms === 0) await p.sleep(5);
    controls.kill.abort();
    await p.untilStopped();
  });
  // a grace period no test would wait for: only the kill can end the step
  const { record } = await runOn(engine, f, file, { graceSeconds: 3600, controls: (c) => (controls = c) });
  assert.equal(record.status, 'canceled');
  assert.equal(record.steps[0]!.status, 'canceled');
  assert.equal(record.steps[0]!.exitCode, 137);
  assert.deepEqual(engine.entries('kill', 'work').map((e) => e.why), ['kill']);
  assert.equal(onBranch(f, record, 'progress.txt'), 'half');
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

const GATED = `  - id: ask
    run: ask
    egress: [api.example.com]`;

test('a step behind its gateway: its command waits for the gateway, whose network and container go with the step', async () => {
  const f = await project();
  const file = await pipeline(f, GATED);
  const engine = await new FakeEngine().withGatewayImage();
  engine.step('ask', async (p) => {
    const answer = await p.modelCall({ inputTokens: 100, outputTokens: 20, costUsd: 0.01 });
    await p.write('answer.txt', `status ${answer.status}\n`);
  });
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  assert.equal(onBranch(f, record, 'answer.txt'), 'status 200');
  const step = engine.containers.find((c) => c.spec.image !== GATEWAY_IMAGE)!;
  const gw = engine.containers.find((c) => c.spec.image === GATEWAY_IMAGE)!;
  // the step's only network is its own, its name server the gateway
  assert.equal(step.spec.network, `${step.name}-gw-net`);
  assert.deepEqual(step.spec.dns, [gw.addresses.get(step.spec.network)]);
  assert.equal(step.spec.env.HTTPS_PROXY, 'http://runner-gateway:3128');
  // its command began only once the gateway's had begun (and said it listens)
  assert.ok(engine.entries('begin').find((e) => e.id === gw.id)!.seq < engine.entries('begin', 'ask').find((e) => e.id === step.id)!.seq);
  // the gateway's config came on its standard input, never in its environment
  assert.deepEqual(gw.spec.env, {});
  assert.deepEqual(JSON.parse(gw.spec.stdin as string).allow, ['api.example.com']);
  const calls = (await readFile(path.join(f.home, 'runs', record.runId, 'calls.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(calls.length, 1);
  assert.equal(calls[0].costUsd, 0.01);
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test("an agent's step budget: the gateway refuses the call past it and the step ends budget exhausted", async () => {
  const f = await project();
  const file = await pipeline(
    f,
    `  - id: spend
    agent: thrifty
    run: spend`,
    `agents:
  thrifty:
    image: runner/base:latest
    egress: [api.example.com]
    budget: { usd: 0.5 }`,
  );
  const engine = await new FakeEngine().withGatewayImage();
  let made = 0;
  engine.step('spend', async (p) => {
    for (;;) {
      const r = await p.modelCall({ inputTokens: 1000, outputTokens: 100, costUsd: 0.2 });
      if (r.refused) return 1;
      made++;
    }
  });
  const { record } = await runOn(engine, f, file);
  const s = record.steps[0]!;
  assert.equal(made, 3);
  assert.equal(s.status, 'budget_exhausted');
  assert.match(s.message ?? '', /budget exhausted: the gateway refused a model call/);
  assert.equal(JSON.parse(engine.containers.find((c) => c.spec.image === GATEWAY_IMAGE)!.spec.stdin as string).allowance.usd, 0.5);
  assert.equal(record.status, 'failed');
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test("the run's budget, spent by one step, stops every step behind a gateway that runs beside it", async () => {
  const f = await project();
  const file = await pipeline(
    f,
    `  - id: spender
    run: spender
    needs: []
    egress: [api.example.com]
  - id: bystander
    run: bystander
    needs: []
    egress: [api.example.com]`,
    'max_parallel: 2\nbudget: { usd: 1 }',
  );
  const engine = await new FakeEngine().withGatewayImage();
  let bystanderUp!: () => void;
  const up = new Promise<void>((r) => (bystanderUp = r));
  engine
    .step('spender', async (p) => {
      await up;
      for (;;) {
        await p.modelCall({ inputTokens: 10, outputTokens: 10, costUsd: 0.3 });
        await p.sleep(1);
      }
    })
    .step('bystander', async (p) => {
      await p.write('bystander.txt', 'was here\n');
      bystanderUp();
      await p.untilStopped();
    });
  const { record } = await runOn(engine, f, file);
  const by = Object.fromEntries(record.steps.map((s) => [s.id, s]));
  assert.equal(by.spender!.status, 'budget_exhausted');
  assert.equal(by.bystander!.status, 'budget_exhausted');
  assert.match(by.bystander!.message ?? '', /the run's or the day's budget was spent while it ran/);
  assert.equal(record.status, 'failed');
  // the bystander's work is kept: merged back into the run branch
  assert.equal(onBranch(f, record, 'bystander.txt'), 'was here');
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test("a gateway that never listens: the step's command never begins, and the step fails saying so", async () => {
  const f = await project();
  const file = await pipeline(f, GATED);
  const engine = await new FakeEngine().withGatewayImage();
  engine.image(GATEWAY_IMAGE, (p) => {
    p.stderr('gateway: cannot bind\n');
    return 1;
  });
  engine.step('ask', () => assert.fail('must not begin'));
  const { record } = await runOn(engine, f, file);
  const s = record.steps[0]!;
  assert.equal(record.status, 'failed');
  assert.equal(s.error, 'gateway_failed');
  assert.match(s.message ?? '', /the step's gateway did not start: gateway: cannot bind/);
  assert.equal(engine.entries('begin', 'ask').length, 0);
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test("the pipeline's day budget (runner serve's): what earlier runs spent today counts, and the step is stopped once it is spent", async () => {
  const f = await project();
  const file = await pipeline(f, GATED);
  const engine = await new FakeEngine().withGatewayImage();
  let made = 0;
  engine.step('ask', async (p) => {
    for (;;) {
      const r = await p.modelCall({ inputTokens: 10, outputTokens: 10, costUsd: 0.1 });
      if (r.refused) return 1;
      made++;
      await p.sleep(1);
    }
  });
  const { record } = await runOn(engine, f, file, { day: { budget: { usd: 1 }, spent: { usd: 0.95, tokens: 0 } } });
  const s = record.steps[0]!;
  assert.equal(s.status, 'budget_exhausted');
  // the gateway was given what the day had left, and said which budget binds
  const allowance = JSON.parse(engine.containers.find((c) => c.spec.image === GATEWAY_IMAGE)!.spec.stdin as string).allowance;
  assert.ok(Math.abs(allowance.usd - 0.05) < 1e-9, String(allowance.usd));
  assert.match(allowance.usdBy, /the pipeline's budget of \$1 per day/);
  // one call went through (0.95 + 0.1 spends the day); none after it
  assert.equal(made, 1);
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test('a step that ends at once is seen to end, even by an engine that registers the wait sent before its start too late', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: fast\n    run: fast\n  - id: faster\n    run: faster');
  const engine = new FakeEngine({ lateWaits: true }).step('fast', () => 0).step('faster', () => 5);
  const { record } = await runOn(engine, f, file);
  assert.deepEqual(record.steps.map((s) => [s.id, s.status, s.exitCode]), [['fast', 'completed', 0], ['faster', 'failed', 5]]);
  // each ended before its first wait was registered: none was stopped to get there
  assert.deepEqual(engine.entries('term'), []);
});

test("a gateway that dies during a call: the call is charged its worst case, and the step fails, its lost way out said", async () => {
  const f = await project();
  const file = await pipeline(f, GATED);
  const engine = await new FakeEngine().withGatewayImage();
  engine.image(GATEWAY_IMAGE, (p) => fakeGateway(p, { oomAtCall: 2 }));
  engine.step('ask', async (p) => {
    await p.modelCall({ inputTokens: 10, outputTokens: 10, costUsd: 0.01 });
    try {
      await p.modelCall({ inputTokens: 10, outputTokens: 10, costUsd: 0.01 });
    } catch (err) {
      p.stderr(`agent: ${(err as Error).message}\n`);
      return 1;
    }
  });
  const { record, reporter } = await runOn(engine, f, file);
  const s = record.steps[0]!;
  assert.equal(s.status, 'failed');
  assert.match(s.message ?? '', /the step's gateway stopped before its step ended \(out of memory\): the step lost its way out/);
  const calls = (await readFile(path.join(f.home, 'runs', record.runId, 'calls.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(calls.map((c) => [c.costUsd, c.worstCase ?? false]), [[0.01, false], [0.5, true]]);
  assert.ok(reporter.linesOf('ask').some((l) => /charged its worst case, 4106 tokens, \$0\.5000/.test(l)), reporter.linesOf('ask').join('\n'));
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test('a step whose workspace travels (a remote transport): it works on a copy, its work comes back and is committed, its caches are left out', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: away\n    run: away\n    cache: [npm]\n    outputs: [where]\n  - id: home\n    run: home');
  const engine = new FakeEngine();
  const transport = new CopyTransport(engine);
  engine
    .step('away', async (p) => {
      await p.write('from-away.txt', `${await p.read('data.txt')}`);
      await p.output({ where: p.workdir });
    })
    .step('home', async (p) => {
      await p.write('seen.txt', `${await p.read('from-away.txt')}`);
    });
  const { record, reporter } = await runOn(engine, f, file, { transport });
  assert.equal(record.status, 'succeeded');
  const away = engine.containers.find((c) => c.step === 'away')!;
  // it saw a copy, never the runner's disk: no mount of the worktree, the project or a cache
  assert.equal(record.steps[0]!.outputs.where, transport.copies.get(away.name)!.workspace);
  assert.ok(away.spec.mounts.every((m) => !m.source.startsWith(f.root)), JSON.stringify(away.spec.mounts));
  assert.equal(away.spec.env.npm_config_cache, undefined);
  assert.ok(reporter.linesOf('away').some((l) => /cache npm: not used on the fake remote engine/.test(l)), reporter.linesOf('away').join('\n'));
  // its work came back: committed, and the next step saw it
  assert.equal(onBranch(f, record, 'from-away.txt'), 'one\ntwo');
  assert.equal(onBranch(f, record, 'seen.txt'), 'one\ntwo');
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test("a transport whose way back fails: the step's message says so; a step it cannot run refuses the run before anything starts", async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: away\n    run: away');
  const engine = new FakeEngine().step('away', (p) => p.write('lost.txt', 'x\n'));
  const transport = new CopyTransport(engine);
  transport.lose = 'the node was lost';
  const { record } = await runOn(engine, f, file, { transport });
  assert.match(record.steps[0]!.message ?? '', /its work could not be fetched back: the node was lost/);
  assert.equal(onBranch(f, record, 'lost.txt'), undefined);

  const sandboxed = await pipeline(f, '  - id: a\n    run: a\n    isolation: gvisor', '', 'gvisor.yaml');
  const gvisorEngine = new FakeEngine({ gvisor: true });
  await assert.rejects(runOn(gvisorEngine, f, sandboxed, { transport: new CopyTransport(gvisorEngine) }), /asks for isolation: gvisor, which the fake remote engine cannot give/);
  assert.equal(gvisorEngine.containers.length, 0);
});
