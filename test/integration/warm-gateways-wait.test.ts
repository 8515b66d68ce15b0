/**
 * A warm gateway waits for its step longer than the gateway's own wait for a config (15 s, src/gateway/main.ts):
 * found trying `runner serve --warm 2` on a real project (kleur, on the swarm lab and on the local engine), where
 * every warm gateway exited (1) 15 s after it started ("no config on standard input within 15 s"), while
 * `runner runs ls` went on saying "2 of 2 step gateways warm ... 2 ready". A step that took one near its end
 * failed after 30 s on the swarm ("the swarm manager has not answered for 30s ((HTTP code 404) ... service ...
 * not found)").
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { projectsForThisFile, runCli, serveFolder, until } from '../fixtures/project.js';

const fixture = projectsForThisFile();

const pipeline = (project: string) => `version: 1
name: waits
project: { path: ${project} }
steps:
  - id: one
    image: runner/toolchain:latest
    egress: [allowed.example]
    timeout: 2m
    run: echo hello
`;

/** The home's warm gateways: name and whether it runs. */
function warmGateways(home: string): Array<{ name: string; running: boolean }> {
  const labels = ['--filter', `label=dev.runner.home=${home}`, '--filter', 'label=dev.runner.warm-owner'];
  return execFileSync('docker', ['ps', '-a', ...labels, '--format', '{{.Names}} {{.State}}'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((l) => ({ name: l.split(' ')[0]!, running: l.split(' ')[1] === 'running' }));
}

test('runner serve --warm 1: a warm gateway nobody takes for 20 s is still running, and runner runs ls says no more than run', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, { 'waits.yaml': pipeline(f.project) }, '127.0.0.1:0', { args: ['--warm', '1'] });
  try {
    const [first] = await until('one warm gateway running', async () => {
      const up = warmGateways(f.home).filter((g) => g.running);
      return up.length === 1 ? up : undefined;
    }, 60_000);
    await sleep(20_000);
    const now = warmGateways(f.home);
    assert.deepEqual(now.find((g) => g.name === first!.name), { name: first!.name, running: true }, `the warm gateway stopped waiting: ${JSON.stringify(now)}`);
    const ls = await runCli(['runs', 'ls', '--home', f.home]);
    const said = Number(/(\d+) of 1 step gateways? warm/.exec(ls.stdout)?.[1] ?? 0);
    assert.ok(said <= now.filter((g) => g.running).length, `runner runs ls says ${said} warm, ${now.filter((g) => g.running).length} running:\n${ls.stdout}`);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
