import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cacheWriteRefusal, trustedCaches } from '../../src/cache/write-trust.js';
import type { CachePlan } from '../../src/plan/cache-plan.js';
import { agentBefore } from '../../src/run/run-flow.js';

const cache = (name: string, o: Partial<CachePlan> = {}): CachePlan => ({ name, target: `/var/cache/runner/${name}`, env: {}, readOnly: false, maxBytes: 1, ...o });

test('a step before any agent step writes; an agent step, or a step after one, does not', () => {
  assert.equal(cacheWriteRefusal({ agent: false }, undefined), undefined);
  assert.equal(cacheWriteRefusal({ agent: true }, undefined), 'an agent step');
  assert.equal(cacheWriteRefusal({ agent: false }, 'implement'), 'it runs after agent step implement, whose work it may run');
});

test("a step in a workspace earlier runs left work in (a task's worktree after its first run, a persistent directory) does not write", () => {
  assert.equal(
    cacheWriteRefusal({ agent: false }, undefined, "task T1's worktree (feat/T1)"),
    "it works in task T1's worktree (feat/T1), which holds what earlier runs left, their agents' work among them",
  );
  assert.equal(cacheWriteRefusal({ agent: true }, undefined, "task T1's worktree"), 'an agent step');
});

test('the caches a step may not write are read through a throw-away layer, said once; ro and rw stay as the file said', () => {
  const caches = [cache('npm'), cache('pip', { readOnly: true }), cache('yarn', { writeAlways: true })];
  assert.deepEqual(trustedCaches(caches, undefined), { caches });
  const held = trustedCaches(caches, 'an agent step');
  assert.deepEqual(held.caches.map((c) => [c.name, c.readOnly]), [['npm', true], ['pip', true], ['yarn', false]]);
  assert.match(held.note!, /^cache npm: read, not written \(an agent step\): .*\{ npm: rw \}/);
  assert.deepEqual(trustedCaches([cache('pip', { readOnly: true })], 'an agent step'), { caches: [cache('pip', { readOnly: true })] }, 'nothing to hold: no note');
});

test("the first agent step in the run's record, this start's, an earlier one's or a fork's carried one", () => {
  assert.deepEqual(agentBefore([]), {});
  assert.deepEqual(agentBefore([{ id: 'setup' }, { id: 'test' }]), {});
  assert.deepEqual(agentBefore([{ id: 'setup' }, { id: 'implement', agent: 'coder' }, { id: 'review', agent: 'finn' }]), { agentBefore: 'implement' });
});
