import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decisionFor, DEFAULT_GATE_TIMEOUT_MS, describeDecider, gateOutputs, gateTimedOut, gateWait, type GateDecision } from '../../src/run/gate.js';

const NOW = new Date('2026-11-27T10:00:00.000Z');

test('a gate waits from now until its timeout, seven days when its file says none; notify kept only when it names someone', () => {
  const plain = gateWait('approve', 'approve', { prompt: 'Read PLAN.md' }, NOW);
  assert.deepEqual(plain, { id: 'approve', name: 'approve', prompt: 'Read PLAN.md', since: NOW.toISOString(), deadline: new Date(NOW.getTime() + DEFAULT_GATE_TIMEOUT_MS).toISOString() });
  assert.equal(DEFAULT_GATE_TIMEOUT_MS, 7 * 24 * 3600 * 1000);
  const told = gateWait('approve', 'approve#2', { prompt: 'p', timeoutMs: 48 * 3600_000, notify: ['team'] }, NOW);
  assert.equal(told.deadline, '2026-11-29T10:00:00.000Z');
  assert.equal(told.name, 'approve#2', 'a second visit keeps its unit name');
  assert.deepEqual(told.notify, ['team']);
  assert.equal('notify' in gateWait('a', 'a', { prompt: 'p', notify: [] }, NOW), false);
});

test('a gate times out at its deadline, not a millisecond before', () => {
  const g = gateWait('a', 'a', { prompt: 'p', timeoutMs: 60_000 }, NOW);
  assert.equal(gateTimedOut(g, new Date(NOW.getTime() + 59_999)), false);
  assert.equal(gateTimedOut(g, new Date(NOW.getTime() + 60_000)), true);
  assert.equal(gateTimedOut(g, new Date(NOW.getTime() + 86_400_000)), true);
});

test("the decision that counts is the gate's newest; another gate's is not its", () => {
  const d = (step: string, decision: GateDecision['decision'], at: string): GateDecision => ({ step, decision, by: { via: 'cli', user: 'ann' }, at, comment: at });
  const list = [d('approve', 'approved', '1'), d('review', 'rejected', '2'), d('approve', 'rejected', '3')];
  assert.equal(decisionFor(list, 'approve')?.at, '3');
  assert.equal(decisionFor(list, 'review')?.decision, 'rejected');
  assert.equal(decisionFor(list, 'approve#2'), undefined);
  assert.equal(decisionFor(undefined, 'approve'), undefined);
  assert.deepEqual(list.map((x) => x.at), ['1', '2', '3'], 'the list is not reordered');
});

test('a decision gives the steps after the gate its decision, comment and who', () => {
  const at = NOW.toISOString();
  assert.deepEqual(gateOutputs({ step: 'a', decision: 'approved', by: { via: 'cli', user: 'ann' }, at, comment: 'go' }), { decision: 'approved', comment: 'go', by: 'ann (cli)' });
  assert.equal(describeDecider({ via: 'dashboard', from: '10.0.0.5' }), '10.0.0.5 (dashboard)');
  assert.equal(describeDecider({ via: 'mcp' }), 'mcp');
  assert.equal(describeDecider({ via: 'timeout' }), 'timeout');
  assert.equal(describeDecider({ via: 'api', user: 'bob', from: '127.0.0.1' }), 'bob (api)', 'a user wins over an address');
});
