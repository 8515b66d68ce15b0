import assert from 'node:assert/strict';
import { test } from 'node:test';
import { visible, visibleLines } from '../../src/common/visible.js';

test('escape sequences, carriage returns and bidi overrides are shown, not sent', () => {
  const cases: Array<[string, string]> = [
    ['\x1b]0;pwned\x07', '\\x1b]0;pwned\\x07'], // window title (OSC ... BEL)
    ['\x1b]52;c;aGk=\x1b\\', '\\x1b]52;c;aGk=\\x1b\\'], // OSC 52: the clipboard
    ['\x1b[2J\x1b[H', '\\x1b[2J\\x1b[H'], // clear the screen
    ['ok\rrunner: ✓ step x completed', 'ok\\rrunner: ✓ step x completed'],
    ['name\nrunner: forged', 'name\\nrunner: forged'],
    ['back\bspace\x7f', 'back\\x08space\\x7f'],
    ['\u009b2J', '\\x9b2J'], // the 8-bit CSI
    ['evil\u202etxt.exe', 'evil\\u202etxt.exe'],
    ['tab\tstays, ünïcödé stays', 'tab\tstays, ünïcödé stays'],
    ['\0', '\\x00'],
  ];
  for (const [input, want] of cases) assert.equal(visible(input), want, JSON.stringify(input));
});

test('visibleLines keeps line ends and shows everything else', () => {
  assert.equal(visibleLines('a\x1b[31m\r\nb\n'), 'a\\x1b[31m\\r\nb\n');
  assert.equal(visible('plain text\twith a tab'), 'plain text\twith a tab');
});
