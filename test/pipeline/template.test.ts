import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findExpressions, renderScript, renderTemplate } from '../../src/pipeline/template.js';

test('expressions are found with and without spaces', () => {
  const found = findExpressions('a ${{ prompt }} b ${{steps.design.outputs.summary}} c ${{ env.X }}');
  assert.deepEqual(found.map((f) => f.expr), [
    { kind: 'prompt' },
    { kind: 'output', step: 'design', key: 'summary' },
    undefined,
  ]);
});

test('renderTemplate substitutes values as text', () => {
  const out = renderTemplate('say ${{ prompt }}!', () => 'hi');
  assert.equal(out, 'say hi!');
});

test('renderScript never puts a value into shell code', () => {
  const hostile = '$(rm -rf /); `id`; "quoted"';
  const r = renderScript('echo "${{ steps.a.outputs.x }}" ${{ prompt }}', (e) => (e.kind === 'prompt' ? 'p' : hostile));
  assert.equal(r.script, 'echo "${RUNNER_EXPR_0}" ${RUNNER_EXPR_1}');
  assert.deepEqual(r.env, { RUNNER_EXPR_0: hostile, RUNNER_EXPR_1: 'p' });
});

test('$${{ is an escape: the text ${{ … }} passes through, in templates and scripts, and is not an expression', () => {
  assert.deepEqual(findExpressions('uses $${{ secrets.X }} and ${{ prompt }}').map((f) => f.raw), ['${{ prompt }}']);
  assert.equal(renderTemplate('token: $${{ secrets.X }} for ${{ prompt }}', () => 'p'), 'token: ${{ secrets.X }} for p');
  const r = renderScript("echo '$${{ github.sha }}' \"${{ prompt }}\"", () => 'p');
  assert.equal(r.script, 'echo \'${{ github.sha }}\' "${RUNNER_EXPR_0}"');
  assert.deepEqual(r.env, { RUNNER_EXPR_0: 'p' });
});
