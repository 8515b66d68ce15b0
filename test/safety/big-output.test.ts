/**
 * A step that prints 1 GB cannot take the runner down: its memory stays bounded (the container's output is read
 * with backpressure) and the step's log is capped. Its own file so that the gVisor lane can leave it out: under
 * gVisor the engine is Docker's as in the main lane, and what is tested is the runner reading that engine's stream,
 * the same whatever kernel the step has (scripts/test-suite.sh). It runs on Podman, whose stream is its own.
 */
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, pipelineYaml, projectsForThisFile, watchPeakMemory, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('1 GB of output keeps the runner bounded and the log capped', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    // 24 million lines go through the runner: a busy machine took longer than the default 2 minutes, and the
    // step's time is not what this test is about
    pipelineYaml(`  - id: flood
    timeout: 15m
    run: |
      yes 'a line of output that repeats and repeats' | head -c 1000000000
`),
  );
  let mem: ReturnType<typeof watchPeakMemory> | undefined;
  const r = await execPipeline(f, file, [], { tailOnly: true, onSpawn: (c) => (mem = watchPeakMemory(c.pid!)) });
  mem!.stop();
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  const peakMb = mem!.peak() / 1024 ** 2;
  assert.ok(peakMb > 0 && peakMb < 320, `runner peak memory ${peakMb.toFixed(0)} MB`);
  const log = path.join(f.home, 'runs', r.json.runId, 'steps', 'flood.log');
  const size = (await stat(log)).size;
  assert.ok(size <= 101 * 1024 * 1024, `log size ${size}`);
  assert.match((await readFile(log, 'utf8')).slice(-300), /\[runner: log cut at \d+ bytes/);
  console.log(`# 1 GB of output: runner peak RSS ${peakMb.toFixed(0)} MB, log ${(size / 1024 ** 2).toFixed(0)} MB`);
});
