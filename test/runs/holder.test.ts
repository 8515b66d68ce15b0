/**
 * The run holder, where no engine is needed: a flood of starts is bounded
 * (runner mcp holds at most maxLive runs at once, each refused past it with
 * why and what to do), cancel of a run not held here is refused, and a run
 * held here is claimed until it ends (run-requests.ts), so another door on
 * the same home never takes it up. The runs held here never get as far as
 * the engine: their pipeline is still loading, then found gone.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { RunnerError } from '../../src/common/errors.js';
import { openEngine } from '../../src/container/engine.js';
import { Git } from '../../src/git/git.js';
import { loadPipeline, type LoadedPipeline } from '../../src/pipeline/load.js';
import { ConsoleReporter } from '../../src/cli/console-reporter.js';
import { readRun } from '../../src/run/records.js';
import { RunHolder } from '../../src/runs/holder.js';
import { acceptedElsewhere } from '../../src/runs/run-requests.js';
import { defaultSettings } from '../../src/settings/run-settings.js';
import { RunnerHome } from '../../src/workspace/home.js';

const PIPELINE = `version: 1
name: slow
project: { path: ., push: never }
defaults: { image: runner/base:latest, timeout: 1m }
steps:
  - id: wait
    run: sleep 30
`;

test('a flood of starts: past maxLive held runs, start is refused (busy) and records nothing; room again once one ends', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'runner-holder-'));
  try {
    const home = new RunnerHome(path.join(root, 'home'));
    await home.ensure();
    const file = path.join(root, 'slow.yaml');
    await writeFile(file, PIPELINE);
    const loaded = await loadPipeline(file);
    const said: string[] = [];
    const sink = { write: () => undefined };
    const holder = new RunHolder(home, {
      door: 'runner mcp',
      runtime: openEngine('local').runtime,
      makeGit: (who) => new Git(who),
      reporterFor: () => new ConsoleReporter(sink, sink, false),
      secrets: async () => ({}),
      say: (m) => said.push(m),
      settings: defaultSettings(),
      maxLive: 2,
    });
    // Two runs held whose pipeline is still loading: they hold their places.
    const gates: Array<(l: LoadedPipeline | undefined) => void> = [];
    const held = [0, 1].map((i) => {
      const runId = `20250101-00000${i}-hold0${i}`;
      return { runId, done: holder.hold({ pipeline: 'slow', why: 'trigger', runId }, () => new Promise((r) => gates.push(r))) };
    });
    assert.equal(holder.size, 2);
    const before = await readdir(home.runs);
    await assert.rejects(holder.start(loaded, {}, { via: 'mcp' }), (err: unknown) => {
      assert.ok(err instanceof RunnerError);
      assert.equal(err.code, 'busy');
      assert.match(err.message, /runner mcp holds 2 runs, as many as it runs at once \(2\): wait for one to end \(or cancel one\)/);
      return true;
    });
    assert.deepEqual(await readdir(home.runs), before, 'a refused start leaves no record');
    assert.equal(await holder.cancel('20250101-000000-other1'), false, 'a run not held here is not canceled');

    // One ends (its pipeline gone before it could start): recorded not_started, no longer held, nor claimed.
    gates[0]!(undefined);
    await held[0]!.done;
    assert.equal(holder.size, 1);
    assert.equal(await acceptedElsewhere(home.root, held[0]!.runId), false);
    // room for one more: queued on disk, its id given at once
    const runId = await holder.start(loaded, {}, { via: 'mcp' });
    assert.ok(holder.active().includes(runId));
    assert.equal(holder.size, 2);
    assert.equal(await holder.cancel(runId), true, 'a run held here is canceled');
    gates[1]!(undefined);
    await held[1]!.done;
    await holder.stop(60_000);
    assert.equal(holder.size, 0);
    const rec = await readRun(home.runs, runId);
    assert.equal(rec.status, 'not_started', JSON.stringify(rec));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
