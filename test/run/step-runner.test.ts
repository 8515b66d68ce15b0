/** How a step's container ended, as the runner reads it from the engine. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ExitState } from '../../src/container/runtime.js';
import { exitState } from '../../src/run/step-runner.js';

/** A container whose engine answers these states in turn (the last one for good), counting the questions. */
function answering(...states: ExitState[]) {
  let asked = 0;
  return {
    get asked() {
      return asked;
    },
    inspect: async () => states[Math.min(asked++, states.length - 1)]!,
  };
}

test('an OOM kill the engine learns of after the exit is still reported as OOM', async () => {
  const c = answering({ exitCode: 137, oomKilled: false }, { exitCode: 137, oomKilled: false }, { exitCode: 137, oomKilled: true });
  assert.deepEqual(await exitState(c, 'exit'), { exitCode: 137, oomKilled: true });
  assert.equal(c.asked, 3);
});

test('a SIGKILL that is no OOM kill stays exit 137, after a bounded wait', async () => {
  const c = answering({ exitCode: 137, oomKilled: false });
  assert.deepEqual(await exitState(c, 'exit'), { exitCode: 137, oomKilled: false });
  assert.equal(c.asked, 16, 'asked once, then 15 more times at most');
});

test('any other end is read once: a clean exit, a failure, and a kill by the runner (timeout, cancel)', async () => {
  for (const [state, reason] of [
    [{ exitCode: 0, oomKilled: false }, 'exit'],
    [{ exitCode: 1, oomKilled: false }, 'exit'],
    [{ exitCode: 137, oomKilled: true }, 'exit'],
    [{ exitCode: 137, oomKilled: false }, 'timeout'],
    [{ exitCode: 137, oomKilled: false }, 'canceled'],
  ] as const) {
    const c = answering(state);
    assert.deepEqual(await exitState(c, reason), state);
    assert.equal(c.asked, 1, `${JSON.stringify(state)} ${reason}`);
  }
});

test('under gVisor a SIGKILL the runner did not send is the memory cap; under runc, or a kill of the runner\'s own, it is not', async () => {
  const { killedAtMemoryCap } = await import('../../src/run/run-step.js');
  assert.equal(killedAtMemoryCap('gvisor', { reason: 'exit', exitCode: 137, oomKilled: false }), true);
  assert.equal(killedAtMemoryCap('runc', { reason: 'exit', exitCode: 137, oomKilled: false }), false);
  // an engine that never reports the kill (Podman on cgroup v1): a SIGKILL the runner did not send is the cap
  assert.equal(killedAtMemoryCap('runc', { reason: 'exit', exitCode: 137, oomKilled: false, oomUnreported: true }), true);
  assert.equal(killedAtMemoryCap('runc', { reason: 'timeout', exitCode: 137, oomKilled: false, oomUnreported: true }), false, "the runner's own kill is not");
  assert.equal(killedAtMemoryCap('runc', { reason: 'exit', exitCode: 1, oomKilled: false, oomUnreported: true }), false);
  assert.equal(killedAtMemoryCap(undefined, { reason: 'exit', exitCode: 137, oomKilled: false }), false);
  assert.equal(killedAtMemoryCap('gvisor', { reason: 'timeout', exitCode: 137, oomKilled: false }), false);
  assert.equal(killedAtMemoryCap('gvisor', { reason: 'canceled', exitCode: 137, oomKilled: false }), false);
  assert.equal(killedAtMemoryCap('gvisor', { reason: 'exit', exitCode: 1, oomKilled: false }), false);
  assert.equal(killedAtMemoryCap('gvisor', { reason: 'exit', exitCode: 2, oomKilled: false }), false, 'a sandbox that died (exit 2) is not the memory cap');
});

test('a container the engine never ends after its timeout is stopped, killed, then given up on and removed: the run does not wait for ever', async () => {
  const { runContainer } = await import('../../src/run/step-runner.js');
  const calls: string[] = [];
  const never = new Promise<void>(() => undefined);
  const handle = {
    id: 'wedged',
    attach: async () => ({ ended: never, close: () => calls.push('close') }),
    start: async () => void calls.push('start'),
    wait: () => never,
    waitNotRunning: () => never,
    inspect: async () => ({ exitCode: null, oomKilled: false }),
    pidsLimitHits: async () => undefined,
    stop: async () => void calls.push('stop'),
    kill: async () => void calls.push('kill'),
    remove: async () => void calls.push('remove'),
    connect: async () => undefined,
    addressOn: async () => undefined,
  };
  const runtime = { create: async () => handle } as unknown as Parameters<typeof runContainer>[0];
  const problems: string[] = [];
  const end = await runContainer(runtime, {} as Parameters<typeof runContainer>[1], {
    timeoutMs: 20,
    signal: new AbortController().signal,
    killSignal: new AbortController().signal,
    graceSeconds: 0,
    onStdout: () => undefined,
    onStderr: () => undefined,
    onCleanupError: (m) => problems.push(m),
    abandonAfterKillMs: 50,
  });
  assert.equal(end.reason, 'timeout');
  assert.equal(end.exitCode, null);
  assert.match(end.problem?.message ?? '', /did not end the container wedged after its stop and kill; it is removed by force/);
  assert.deepEqual(calls, ['start', 'stop', 'kill', 'close', 'remove']);
  assert.deepEqual(problems, []);
});
