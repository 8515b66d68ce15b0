import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HELP, helpFor } from '../../src/cli/help.js';

test('runner CMD --help: that command\'s lines only; an unknown one gets the whole help', () => {
  const mcp = helpFor('mcp');
  assert.match(mcp, /^ {2}runner mcp \[--home DIR\]/);
  assert.match(mcp, /claude mcp add runner -- runner mcp/);
  assert.doesNotMatch(mcp, /runner serve --pipelines/);
  assert.match(helpFor('serve'), /--project DIR/);
  assert.equal(helpFor('nope'), HELP);
});

test('exec, serve and mcp each list every run-settings flag in their usage lines', async () => {
  const { SETTINGS_FLAGS } = await import('../../src/settings/flags.js');
  for (const door of ['exec', 'serve', 'mcp']) {
    const usage = helpFor(door).split(/\n {6}\S/)[0]!;
    for (const flag of Object.keys(SETTINGS_FLAGS)) assert.ok(usage.includes(`[--${flag} `) || usage.includes(`[--${flag}]`), `runner ${door}'s usage names --${flag}`);
  }
});
