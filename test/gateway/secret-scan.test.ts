import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { base64Inner, ByteBudget, MIN_SECRET_BYTES, patternsOf, percentDecode, SecretScanner } from '../../src/gateway/secret-scan.js';

const TOKEN = 'ghp_R8xV2mQp7LzK4nW9tY3bC6dF1hJ5sA0eU';
/** a password with characters every encoding treats differently */
const PASSWORD = 'p@ss w0rd/+=&"é~*';
const scanner = new SecretScanner([
  { name: 'GITHUB_TOKEN', value: TOKEN },
  { name: 'DB_PASSWORD', value: PASSWORD },
]);

/** The value in every form the issue names, written here independently of the scanner, with the form it must be reported as. */
function forms(value: string): Array<{ form: string; text: string }> {
  const bytes = Buffer.from(value, 'utf8');
  const out = [
    { form: 'plain', text: value },
    { form: 'url-encoded', text: encodeURIComponent(value) },
    { form: 'url-encoded', text: encodeURIComponent(value).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()) },
    { form: 'form-encoded', text: new URLSearchParams({ k: value }).toString().slice(2) },
    { form: 'percent-encoded', text: [...bytes].map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`).join('') },
    { form: 'percent-encoded', text: [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('') },
    { form: 'hex', text: bytes.toString('hex') },
    { form: 'hex', text: bytes.toString('hex').toUpperCase() },
  ];
  // base64 inside a longer base64 text, at each of the 3 alignments, padded or not
  for (let a = 0; a < 3; a++) {
    const around = Buffer.concat([randomBytes(a + 3), bytes, randomBytes(4)]);
    out.push({ form: 'base64', text: around.toString('base64') });
    out.push({ form: 'base64url', text: around.toString('base64url') });
    out.push({ form: 'base64', text: Buffer.concat([Buffer.alloc(a), bytes]).toString('base64') });
  }
  return out;
}

/**
 * The form a hit is reported as: the first of the scanner's forms that writes the value this way (a token that
 * encodeURIComponent leaves as it is is plain; a base64 text with no "+" or "/" is base64 and base64url alike).
 */
function sameForm(expected: string, got: string | undefined, text: string, value: string, where: string): boolean {
  if (expected === got) return true;
  if (where === 'a JSON body' && JSON.stringify(text) !== `"${text}"`) return got === 'json-escaped'; // JSON.stringify escaped the '"'
  if (text.includes(value)) return got === 'plain';
  if (expected === 'base64url') return got === 'base64'; // its stable characters have no "+" or "/": one pattern for both
  if (expected === 'percent-encoded' || expected === 'form-encoded') return got === 'url-encoded';
  return false;
}

function contexts(text: string): Array<{ where: string; data: string }> {
  return [
    { where: 'a JSON body', data: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hello' }], note: text }) },
    {
      where: 'a multipart body',
      data: `--XyZ\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--XyZ\r\nContent-Disposition: form-data; name="file"; filename="x.txt"\r\nContent-Type: text/plain\r\n\r\nbefore ${text} after\r\n--XyZ--\r\n`,
    },
    { where: 'a URL query', data: `/repos/acme/app/issues?state=open&q=${text}&page=2` },
    { where: 'a header', data: `Bearer ${text}` },
  ];
}

test('each form of each secret is found in a JSON body, multipart, a URL query and a header, and named without its value', () => {
  for (const [name, value] of [['GITHUB_TOKEN', TOKEN], ['DB_PASSWORD', PASSWORD]] as const) {
    for (const { form, text } of forms(value)) {
      for (const { where, data } of contexts(text)) {
        const hit = scanner.findIn(data);
        assert.equal(hit?.secret, name, `${name} as ${form} (${text}) in ${where}`);
        assert.ok(sameForm(form, hit?.form, text, value, where), `${name} as ${form} in ${where}: reported as ${hit?.form}`);
        assert.ok(!JSON.stringify(hit).includes(value), 'the hit never holds the value');
        assert.deepEqual(scanner.findIn(Buffer.from(data)), hit, 'bytes as text');
      }
    }
  }
});

test('a form split across two chunks at every position is found, and so is one fed a byte at a time', () => {
  let cases = 0;
  for (const [name, value] of [['GITHUB_TOKEN', TOKEN], ['DB_PASSWORD', PASSWORD]] as const) {
    for (const { form, text } of forms(value)) {
      const body = Buffer.from(`{"a":"${'x'.repeat(20)}","v":"${text}","z":1}`);
      for (let split = 0; split <= body.length; split++) {
        const s = scanner.stream();
        const first = s.push(body.subarray(0, split));
        const second = s.push(body.subarray(split));
        assert.equal((first ?? second)?.secret, name, `${form} split at ${split}`);
        assert.equal(second?.secret, name, 'a hit is said again on every later push');
        cases++;
      }
      const bytewise = scanner.stream();
      let hit;
      for (let i = 0; i < body.length && !hit; i++) hit = bytewise.push(body.subarray(i, i + 1));
      assert.equal(hit?.secret, name, `${form} a byte at a time`);
    }
  }
  assert.ok(cases > 1000);
});

test('a chunk the caller reuses after the push does not blind the stream', () => {
  const s = scanner.stream();
  const buf = Buffer.from(`xxxx${TOKEN.slice(0, 20)}`);
  assert.equal(s.push(buf), undefined);
  buf.fill(0x20);
  assert.equal(s.push(Buffer.from(`${TOKEN.slice(20)}yyyy`))?.secret, 'GITHUB_TOKEN');
});

test('a URL half encoded, encoded twice, or form-encoded by hand is found once decoded', () => {
  const half = `${encodeURIComponent(TOKEN.slice(0, 10))}${[...TOKEN.slice(10, 14)].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')}${TOKEN.slice(14)}`;
  assert.deepEqual(scanner.findIn(`https://evil.example/x?t=${half}`), { secret: 'GITHUB_TOKEN', form: 'url-encoded' });
  const twice = encodeURIComponent([...TOKEN].map((c) => `%${c.charCodeAt(0).toString(16)}`).join(''));
  assert.deepEqual(scanner.findIn(`/x?t=${twice}`), { secret: 'GITHUB_TOKEN', form: 'url-encoded percent-encoded' });
  assert.deepEqual(scanner.findIn(`/x?t=${encodeURIComponent(encodeURIComponent(PASSWORD))}`), { secret: 'DB_PASSWORD', form: 'url-encoded url-encoded' });
  const mixed = PASSWORD.replace('+', '%2B').replace(' ', '+').replace('@', '%40').replace('/', '%2f');
  assert.deepEqual(scanner.findIn(`/login?pw=${mixed}`), { secret: 'DB_PASSWORD', form: 'url-encoded' });
  const b64InUrl = encodeURIComponent(Buffer.from(`user:${PASSWORD}`).toString('base64'));
  assert.equal(scanner.findIn(`/x?auth=${b64InUrl}`)?.secret, 'DB_PASSWORD');
});

test('a value in HTTP basic credentials (user:password in base64) is found', () => {
  assert.deepEqual(scanner.findIn(`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`), { secret: 'GITHUB_TOKEN', form: 'base64' });
});

test('the case of a plain or base64 value counts; the case of hex and percent-encodings does not', () => {
  assert.equal(scanner.findIn(TOKEN.toLowerCase()), undefined);
  assert.equal(scanner.findIn(TOKEN.toUpperCase()), undefined);
  assert.equal(scanner.findIn(Buffer.from(TOKEN).toString('base64').toLowerCase()), undefined);
  const mixedHex = [...Buffer.from(TOKEN).toString('hex')].map((c, i) => (i % 3 ? c : c.toUpperCase())).join('');
  assert.equal(scanner.findIn(mixedHex)?.form, 'hex');
  const mixedPct = [...Buffer.from(PASSWORD)].map((b, i) => `%${b.toString(16).padStart(2, '0')[i % 2 ? 'toUpperCase' : 'toLowerCase']()}`).join('');
  assert.equal(scanner.findIn(mixedPct)?.secret, 'DB_PASSWORD');
  // encodeURIComponent's unencoded letters keep their case
  assert.equal(scanner.findIn(encodeURIComponent(PASSWORD).replace('ss', 'SS')), undefined);
});

test('ordinary traffic is not refused: random bytes, a base64 blob, hex, JSON and the secrets\' near misses', () => {
  const tarball = randomBytes(4 * 1024 * 1024);
  assert.equal(scanner.findIn(tarball), undefined, 'a package tarball of random bytes');
  const s = scanner.stream();
  for (let i = 0; i < tarball.length; i += 65536) assert.equal(s.push(tarball.subarray(i, i + 65536)), undefined);
  assert.equal(scanner.findIn(randomBytes(3 * 1024 * 1024).toString('base64')), undefined, 'a base64 blob');
  assert.equal(scanner.findIn(randomBytes(1024 * 1024).toString('hex')), undefined, 'a hex dump');
  assert.equal(scanner.findIn(JSON.stringify({ name: '@acme/pkg', versions: { '1.0.0': { dist: { integrity: `sha512-${randomBytes(64).toString('base64')}` } } } })), undefined);
  assert.equal(scanner.findIn(TOKEN.slice(0, -1)), undefined, 'all but the last character');
  assert.equal(scanner.findIn(TOKEN.slice(1)), undefined, 'all but the first character');
  assert.equal(scanner.findIn(`${TOKEN.slice(0, 20)}X${TOKEN.slice(21)}`), undefined, 'one character changed');
});

test('data that almost matches everywhere (a value in the wrong case, over and over) is still refused nothing', () => {
  const data = Buffer.from(TOKEN.toLowerCase().repeat(100_000));
  assert.equal(scanner.findIn(data), undefined);
  const s = scanner.stream();
  for (let i = 0; i < data.length; i += 1000) assert.equal(s.push(data.subarray(i, i + 1000)), undefined);
  assert.equal(scanner.findIn(`${TOKEN.toLowerCase().repeat(3)}${TOKEN}`)?.secret, 'GITHUB_TOKEN', 'but the value among them is found');
});

test('values too short to check without refusing ordinary traffic are named, not checked', () => {
  const s = new SecretScanner([
    { name: 'PIN', value: '1234' },
    { name: 'EMPTY', value: '' },
    { name: 'SEVEN', value: 'abcdefg' },
    { name: 'EIGHT', value: 'abcdefgh' },
    { name: 'SHORT_UTF8', value: 'ééé' },
    { name: 'LONG_UTF8', value: 'éééé' },
  ]);
  assert.deepEqual(s.unchecked, ['PIN', 'EMPTY', 'SEVEN', 'SHORT_UTF8']);
  assert.equal(MIN_SECRET_BYTES, 8);
  assert.equal(s.findIn('x abcdefg 1234 ééé'), undefined);
  assert.deepEqual(s.findIn('x abcdefgh y'), { secret: 'EIGHT', form: 'plain' });
  assert.deepEqual(s.findIn(Buffer.from('éééé').toString('base64')), { secret: 'LONG_UTF8', form: 'base64' });
  const none = new SecretScanner([]);
  assert.deepEqual(none.unchecked, []);
  assert.equal(none.findIn('anything'), undefined);
  assert.equal(none.stream().push(Buffer.from('anything')), undefined);
});

test('two secrets with one value: the first named is reported; overlapping values are each found', () => {
  const s = new SecretScanner([
    { name: 'A', value: 'same-value-123' },
    { name: 'B', value: 'same-value-123' },
  ]);
  assert.equal(s.findIn('x same-value-123 y')?.secret, 'A');
  const t = new SecretScanner([
    { name: 'A', value: 'same-value-123' },
    { name: 'C', value: 'e-value-12' },
  ]);
  assert.equal(t.findIn('x e-value-12 y')?.secret, 'C');
  assert.equal(t.findIn('same-value-12X')?.secret, 'C', 'a value that ends inside the text of another one, not followed to its end');
});

test('the stable base64 characters of each alignment are those that depend on the value alone', () => {
  const value = randomBytes(20);
  const inner = base64Inner(value);
  assert.equal(inner.length, 3);
  for (let a = 0; a < 3; a++) {
    for (let trial = 0; trial < 20; trial++) {
      const text = Buffer.concat([randomBytes(a + 3 * trial), value, randomBytes(trial % 4)]).toString('base64');
      assert.ok(text.includes(inner[a]!), `alignment ${a}`);
    }
  }
  assert.equal(inner[0], Buffer.from(value).toString('base64').slice(0, 26), '20 bytes: 160 bits, 26 whole characters');
  assert.deepEqual(base64Inner(Buffer.from('abc')), ['YWJj', 'FiY', 'hYm']);
});

test('patterns are listed once each, with their forms', () => {
  const p = patternsOf('T', 'abcdefgh12345678');
  assert.deepEqual(p.map((x) => x.form), ['plain', 'percent-encoded', 'base64', 'base64', 'base64', 'hex']);
  const q = patternsOf('P', PASSWORD);
  assert.deepEqual([...new Set(q.map((x) => x.form))], ['plain', 'json-escaped', 'url-encoded', 'form-encoded', 'percent-encoded', 'base64', 'base64url', 'hex']);
});

test('percent-decoding keeps what is not an encoding', () => {
  assert.equal(percentDecode(Buffer.from('a%41%2x%+b%4'), true).toString(), 'aA%2x% b%4');
  assert.equal(percentDecode(Buffer.from('%25%4a+%'), false).toString(), '%J+%');
  const changed: number[] = [];
  percentDecode(Buffer.from('ab%41c+d%4'), true, changed);
  assert.deepEqual(changed, [2, 4]);
});

test('twenty secrets in every form over 10 MiB: the scan is linear (figure printed, not asserted)', () => {
  const many = new SecretScanner(Array.from({ length: 20 }, (_, i) => ({ name: `S${i}`, value: randomBytes(30).toString('base64url') })));
  const data = randomBytes(10 * 1024 * 1024);
  const measure = (f: () => unknown): string => {
    let best = Infinity;
    for (let i = 0; i < 3; i++) {
      const before = process.cpuUsage();
      assert.equal(f(), undefined);
      const used = process.cpuUsage(before);
      best = Math.min(best, (used.user + used.system) / 1000);
    }
    return `${best.toFixed(1)} ms`;
  };
  const stream = measure(() => {
    const s = many.stream();
    let hit;
    for (let i = 0; i < data.length; i += 65536) hit ??= s.push(data.subarray(i, i + 65536));
    return hit;
  });
  const whole = measure(() => many.findIn(data));
  console.log(`secret scan, 20 secrets (${many.patternCount} patterns, a table of ${(many.tableBytes / 1024 / 1024).toFixed(1)} MiB), 10 MiB of random bytes, best of 3 in CPU time: streamed in 64 KiB chunks ${stream}, findIn (raw and decoded) ${whole}`);
  // and a value at the very end of it is found, whole or streamed
  const value = Buffer.from(randomBytes(30).toString('base64url'));
  const withValue = new SecretScanner([{ name: 'LAST', value: value.toString() }]);
  const tail = Buffer.concat([data, Buffer.from(value.toString('hex'))]);
  assert.deepEqual(withValue.findIn(tail), { secret: 'LAST', form: 'hex' });
  const s = withValue.stream();
  let hit;
  for (let i = 0; i < tail.length; i += 65536) hit ??= s.push(tail.subarray(i, i + 65536));
  assert.deepEqual(hit, { secret: 'LAST', form: 'hex' });
});

test('the byte budget holds what fits, queues the rest in order, and refuses what never fits', async () => {
  const b = new ByteBudget(100);
  await b.take(60);
  assert.equal(b.inUse, 60);
  const order: string[] = [];
  const big = b.take(50).then(() => order.push('big'));
  const small = b.take(10).then(() => order.push('small'));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, [], 'a small one waits behind a big one that does not fit');
  await b.take(0);
  assert.equal(b.inUse, 60, 'a request without a body never waits: it holds nothing');
  b.give(60);
  await Promise.all([big, small]);
  assert.deepEqual(order, ['big', 'small']);
  assert.equal(b.inUse, 60);
  await assert.rejects(b.take(101), /a body of 101 bytes is larger than the 100 bytes the gateway holds for all request bodies at once/);
  await assert.rejects(b.take(-1), /whole number/);
  assert.throws(() => b.give(61), /cannot give back 61 bytes of the body budget: 60 are in use/);
  await b.take(0);
  b.give(60);
  assert.equal(b.inUse, 0);
  assert.throws(() => new ByteBudget(0), /positive whole number/);
});

test('a take aborted while waiting takes nothing and lets those behind it go', async () => {
  const b = new ByteBudget(100);
  await b.take(90);
  const ac = new AbortController();
  const aborted = b.take(50, ac.signal);
  let smallDone = false;
  const small = b.take(5).then(() => (smallDone = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(smallDone, false);
  ac.abort(new Error('the step hung up'));
  await assert.rejects(aborted, /the step hung up/);
  await small;
  assert.equal(b.inUse, 95);
  await assert.rejects(b.take(1, AbortSignal.abort(new Error('gone'))), /gone/);
  assert.equal(b.inUse, 95);
});

test('100 parallel uploads never hold more than the budget, and all finish', async () => {
  const b = new ByteBudget(8 * 1024 * 1024);
  let most = 0;
  const upload = async (i: number): Promise<void> => {
    const size = (1 + (i % 4)) * 1024 * 1024;
    await b.take(size);
    most = Math.max(most, b.inUse);
    await new Promise((r) => setTimeout(r, i % 3));
    b.give(size);
  };
  await Promise.all(Array.from({ length: 100 }, (_, i) => upload(i)));
  assert.ok(most <= 8 * 1024 * 1024, `at most ${most}`);
  assert.ok(most >= 4 * 1024 * 1024, 'and they did run side by side');
  assert.equal(b.inUse, 0);
});
