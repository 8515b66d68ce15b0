import assert from 'node:assert/strict';
import { test } from 'node:test';
import { unreachableLine, wayReport } from '../../../src/run/step-addons/gateway.js';
import type { StepWayReport } from '../../../src/run/step-network.js';

const quiet: StepWayReport = { budgetExhausted: false, refused: [], refusedOthers: 0, pathsRefused: 0 };

test('a step without a gateway, or one whose gateway had nothing to say, reports nothing', () => {
  assert.deepEqual(wayReport(undefined, { overRun: false, exited: true }), {});
  assert.deepEqual(wayReport(quiet, { overRun: false, exited: true }), {});
});

test('refusals: in the record, and a line each in the log', () => {
  const r = wayReport({ ...quiet, refused: [{ host: 'evil.example', count: 3 }, { host: 'x.example', count: 1 }], refusedOthers: 2, pathsRefused: 1 }, { overRun: false, exited: true });
  assert.deepEqual(r.egress, { refused: [{ host: 'evil.example', count: 3 }, { host: 'x.example', count: 1 }], others: 2 });
  assert.deepEqual(r.logLines, [
    'runner gateway: refused evil.example 3 times in all',
    'runner gateway: refused x.example 1 time in all',
    'runner gateway: refused 1 request that were not model calls',
  ]);
  assert.equal(r.status, undefined);
});

test('a model call refused for the budget: budget_exhausted when the step then exited by itself', () => {
  const r = wayReport({ ...quiet, budgetExhausted: true }, { overRun: false, exited: true });
  assert.equal(r.status, 'budget_exhausted');
  assert.match(r.problems![0]!, /^budget exhausted: the gateway refused a model call/);
  // stopped for another cause (its timeout): that cause is its status
  assert.equal(wayReport({ ...quiet, budgetExhausted: true }, { overRun: false, exited: false }).status, undefined);
});

test("the run's budget spent while the step ran: budget_exhausted, however it ended", () => {
  const r = wayReport(quiet, { overRun: true, exited: false });
  assert.equal(r.status, 'budget_exhausted');
  assert.match(r.problems![0]!, /the run's or the day's budget was spent while it ran/);
});

test('a gateway that died: the step failed, with why; one that never listened: gateway_failed', () => {
  const r = wayReport({ ...quiet, died: 'the gateway ended (out of memory)', error: 'gateway_failed' }, { overRun: false, exited: true });
  assert.equal(r.status, 'failed');
  assert.deepEqual(r.problems, ['the gateway ended (out of memory)']);
  assert.equal(r.error, 'gateway_failed');
});

test("metered usage replaces the CLI's", () => {
  const usage = { model: 'm', inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.1, turns: 1, sessionId: null, calls: 1 };
  assert.deepEqual(wayReport({ ...quiet, usage }, { overRun: false, exited: true }).usage, usage);
});

test('requests refused by a rule, and requests stopped for a secret: in the record by rule and secret name, a line each in the log', () => {
  const r = wayReport(
    { ...quiet, rulesRefused: [{ rule: '{ host: api.github.com, methods: [GET] }', count: 3 }], secretsRefused: [{ secret: 'DB_PASSWORD', count: 1 }] },
    { overRun: false, exited: true },
  );
  assert.deepEqual(r.egress, { refused: [], rules: [{ rule: '{ host: api.github.com, methods: [GET] }', count: 3 }], secrets: [{ secret: 'DB_PASSWORD', count: 1 }] });
  assert.deepEqual(r.logLines, [
    'runner gateway: the rule { host: api.github.com, methods: [GET] } refused 3 requests in all',
    'runner gateway: stopped 1 request carrying secret DB_PASSWORD in all',
  ]);
  assert.equal(r.status, undefined);
});

test('the secrets too short for the gateway to look for are named at the step\'s start, by name only', async () => {
  const { shortSecrets } = await import('../../../src/run/step-addons/gateway.js');
  assert.deepEqual(shortSecrets({ PIN: '1234', DB_PASSWORD: 'a long enough value', EMPTY: '', CODE: 'abcdefg' }), ['CODE', 'PIN']);
  assert.deepEqual(shortSecrets({ TOKEN: 'ghp_0123456789' }), []);
});

test("a model on this machine that stopped answering while the step ran: in the step's message, by its address", () => {
  const problem = 'the model at http://127.0.0.1:11434 does not answer (connection refused)';
  const r = wayReport({ ...quiet, modelProblems: [problem] }, { overRun: false, exited: true });
  assert.deepEqual(r.problems, [problem]);
  assert.equal(r.status, undefined);
});

test("the step's last word on certificates it was told it will refuse names the hosts and --ca-file, on one line", async () => {
  const { untrustedReminder } = await import('../../../src/run/step-addons/gateway.js');
  const line = untrustedReminder(['registry.npmjs.org', 'files.example:8443', 'bad\nhost']);
  assert.equal(line, 'runner gateway: this step does not trust the certificate of registry.npmjs.org, files.example:8443, bad?host (said above when first asked, with what fixes it: --ca-file, docs/company-networks.md)');
});

test('an allowed host that did not answer: said with its port when not the usual one, why, and what to do; step-made text made safe', () => {
  assert.match(unreachableLine({ host: 'registry.npmjs.org', port: 443, reason: 'ETIMEDOUT' }), /^runner gateway: registry\.npmjs\.org is allowed but did not answer \(ETIMEDOUT: no connection\); .*--egress-proxy/);
  assert.match(unreachableLine({ host: 'github.com', port: 443, reason: 'ENOTFOUND' }), /\(ENOTFOUND: its name does not resolve from the gateway\)/);
  assert.match(unreachableLine({ host: 'x.example', port: 8443, reason: 'ECONNREFUSED' }), /x\.example:8443 is allowed/);
  assert.doesNotMatch(unreachableLine({ host: 'a\x1b[2Jb', port: 1, reason: 'E\rX' }), /[\x00-\x1f]/);
});
