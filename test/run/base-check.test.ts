import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { baseCanTell, baseCheckKey, checkOnBase, describeBase, verdictOf } from '../../src/run/base-check.js';
import type { StepPlan } from '../../src/plan/step-plan.js';
import type { StepResult } from '../../src/run/step-result.js';

const ended = (status: StepResult['status'], exitCode: number | null, error?: string): StepResult => ({
  id: 'verify', status, exitCode, oomKilled: false, timedOut: status === 'timed_out', durationMs: 1, commit: null, outputs: {}, limits: [], ...(error ? { error } : {}),
});

test('which failures the base can tell about, and what the base says', () => {
  assert.equal(baseCanTell({ verify: true }, ended('failed', 1)), true);
  assert.equal(baseCanTell({ verify: false }, ended('failed', 1)), false, 'only verify steps');
  assert.equal(baseCanTell({ verify: true }, ended('timed_out', null)), false, 'a limit is no exit to compare');
  assert.equal(baseCanTell({ verify: true }, ended('failed', null, 'step_not_started')), false, 'a refusal is the runner\'s');
  assert.equal(baseCanTell({ verify: true }, ended('completed', 0)), false);
  assert.equal(verdictOf(ended('completed', 0)), 'introduced');
  assert.equal(verdictOf(ended('failed', 2)), 'pre_existing');
  assert.equal(verdictOf(ended('timed_out', null)), undefined);
  assert.equal(verdictOf(ended('canceled', null)), undefined);
  assert.equal(describeBase({ verdict: 'pre_existing', commit: 'abcdef0123456789', exitCode: 2, runId: 'R' }), 'pre-existing (failed on the base abcdef0123 too, exit 2)');
  assert.equal(describeBase({ verdict: 'introduced', commit: 'abcdef0123456789', exitCode: 0, runId: 'R' }), 'introduced by this run (passed on the base abcdef0123)');
});

test('the memo key is the base, the image and the command', () => {
  const plan = { image: 'img', run: 'npm test\n' } as Pick<StepPlan, 'image' | 'run' | 'command'>;
  const k = baseCheckKey('a'.repeat(40), plan);
  assert.equal(k, baseCheckKey('a'.repeat(40), { ...plan }));
  assert.notEqual(k, baseCheckKey('b'.repeat(40), plan));
  assert.notEqual(k, baseCheckKey('a'.repeat(40), { ...plan, image: 'other' }));
  assert.notEqual(k, baseCheckKey('a'.repeat(40), { ...plan, run: 'npm run lint\n' }));
});

test('tried on the base once, then remembered in the home; a base that cannot tell is not remembered', async () => {
  const home = await mkdtemp(path.join(os.tmpdir(), 'runner-basecheck-'));
  try {
    const plan = { id: 'verify', image: 'img', run: 'make test\n', verify: true } as StepPlan;
    let runs = 0;
    const said: string[] = [];
    const trial = (base: string, r: StepResult) => ({ home, plan, base, runId: 'RUN1', now: () => new Date('2026-11-27T00:00:00Z'), say: (l: string) => said.push(l), runOnBase: async () => (runs++, r) });
    const first = await checkOnBase(trial('1'.repeat(40), ended('failed', 2)));
    assert.deepEqual(first, { commit: '1'.repeat(40), verdict: 'pre_existing', exitCode: 2, runId: 'RUN1', checkedAt: '2026-11-27T00:00:00.000Z' });
    const again = await checkOnBase(trial('1'.repeat(40), ended('completed', 0)));
    assert.equal(runs, 1, 'not run again for the same base and command');
    assert.deepEqual(again, { ...first, remembered: true });
    assert.match(describeBase(again!), /as run RUN1 found/);
    // a day later the base is asked again (what it reaches may have changed)
    const later = await checkOnBase({ ...trial('1'.repeat(40), ended('completed', 0)), now: () => new Date('2026-11-28T00:00:01Z') });
    assert.equal(runs, 2);
    assert.equal(later?.verdict, 'introduced');
    assert.equal(later?.remembered, undefined);
    assert.equal((await checkOnBase(trial('2'.repeat(40), ended('timed_out', null))))?.verdict, undefined);
    assert.match(said.join('\n'), /timed out: whether its failure is this run's cannot be told/);
    assert.equal((await readdir(path.join(home, 'base-checks'))).length, 1, 'the base that could not tell is not remembered (the other, asked again, replaced)');
    const broken = await checkOnBase({ ...trial('3'.repeat(40), ended('completed', 0)), runOnBase: async () => { throw new Error('no worktree'); } });
    assert.equal(broken, undefined);
    assert.match(said.join('\n'), /could not be tried on the base 3333333333: no worktree/);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
});
