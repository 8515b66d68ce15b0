import assert from 'node:assert/strict';
import { test } from 'node:test';
import { visible, visibleBytes, visibleDeep, visibleLines, visibleMessage } from '../../src/common/visible.js';

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

test('line and paragraph separators and lone surrogates are shown; a whole character of two halves stays', () => {
  assert.equal(visible('a\u2028runner: forged\u2029b'), 'a\\u2028runner: forged\\u2029b');
  assert.equal(visibleLines('a\u2028b\n'), 'a\\u2028b\n');
  assert.equal(visible('x\ud800y'), 'x\\ud800y'); // a high half alone
  assert.equal(visible('\udc00z'), '\\udc00z'); // a low half alone
  assert.equal(visible('\udc00\ud800'), '\\udc00\\ud800'); // halves in the wrong order
  assert.equal(visible('emoji 😀 stays'), 'emoji 😀 stays');
  // what a client's UTF-8 encodes: no half of a character left
  const round = Buffer.from(visibleLines('\ud83d end, \ude00 start'), 'utf8').toString('utf8');
  assert.doesNotMatch(round, /\ufffd/);
});

test('visibleLines keeps line ends and shows everything else', () => {
  assert.equal(visibleLines('a\x1b[31m\r\nb\n'), 'a\\x1b[31m\\r\nb\n');
  assert.equal(visible('plain text\twith a tab'), 'plain text\twith a tab');
});

test('a name that is not UTF-8 keeps its bytes visible; what is UTF-8 stays text', () => {
  const cases: Array<[Buffer, string]> = [
    [Buffer.from('d\xff/evil', 'latin1'), 'd\\xff/evil'],
    [Buffer.from('plain/ünï.txt'), 'plain/ünï.txt'],
    [Buffer.from([0x61, 0xc3]), 'a\\xc3'], // a sequence cut short
    [Buffer.from([0xc0, 0xaf]), '\\xc0\\xaf'], // an overlong '/'
    [Buffer.from([0xed, 0xa0, 0x80]), '\\xed\\xa0\\x80'], // a surrogate
    [Buffer.from([0xf0, 0x9f, 0x98, 0x80, 0xfe]), '😀\\xfe'],
    [Buffer.from('a\x1b]0;x\x07\xfe', 'latin1'), 'a\\x1b]0;x\\x07\\xfe'],
  ];
  for (const [input, want] of cases) assert.equal(visibleBytes(input), want, input.toString('hex'));
  assert.notEqual(visibleBytes(Buffer.from([0x64, 0xff])), visibleBytes(Buffer.from([0x64, 0xfe])), 'two names, two texts');
});

test('a message of several lines: its first after the prefix, the others indented, each made visible, the rest counted past the bound', () => {
  assert.equal(visibleMessage('push failed: \nremote: denied\n', 'runner: '), 'runner: push failed: \nrunner:   remote: denied');
  assert.equal(visibleMessage('a\nrunner: ✓ forged\x1b[2J', 'runner: '), 'runner: a\nrunner:   runner: ✓ forged\\x1b[2J');
  const many = visibleMessage(Array.from({ length: 30 }, (_, i) => `l${i}`).join('\n'), 'p: ', 3);
  assert.deepEqual(many.split('\n'), ['p: l0', 'p:   l1', 'p:   l2', 'p:   … 27 more lines']);
});

test('visibleDeep: every string of a value, keys too, made visible as lines; numbers, booleans and null kept', () => {
  const v = visibleDeep({ 'k\x1b': ['a\x9bb', { n: 1, t: true, z: null, s: 'x\ny\u202e' }] });
  assert.deepEqual(v, { 'k\\x1b': ['a\\x9bb', { n: 1, t: true, z: null, s: 'x\ny\\u202e' }] });
});
