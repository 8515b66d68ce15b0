import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allows, hostPatternProblem, portsFor } from '../../src/gateway/hosts.js';

test('exact names and two-label wildcards are valid entries', () => {
  for (const p of ['github.com', 'api.anthropic.com', 'localhost', 'a-b.c0.io', 'xn--mnchen-3ya.de', '*.github.com', '*.a.b.example.org']) {
    assert.equal(hostPatternProblem(p), undefined, p);
  }
  assert.equal(hostPatternProblem(`${'a'.repeat(63)}.com`), undefined, 'a 63-character label');
});

test('a pasted URL, capital or trailing dot is refused with the entry to write instead', () => {
  assert.equal(hostPatternProblem('https://github.com'), '"https://github.com" is not a host name: write github.com (no scheme or path)');
  assert.equal(hostPatternProblem('https://x'), '"https://x" is not a host name: write x (no scheme or path)');
  assert.equal(hostPatternProblem('https://git.example.com:8443/x'), '"https://git.example.com:8443/x" is not a host name: write git.example.com:8443 (no scheme or path)');
  assert.equal(hostPatternProblem('github.com/org/repo'), '"github.com/org/repo" is not a host name: write github.com (no scheme or path)');
  assert.equal(hostPatternProblem('GitHub.com'), '"GitHub.com" is not a host name: write github.com (lowercase)');
  assert.equal(hostPatternProblem('github.com.'), '"github.com." is not a host name: write github.com (no trailing dot)');
  assert.equal(hostPatternProblem(' *.GitHub.com'), '" *.GitHub.com" is not a host name: write *.github.com (no spaces; lowercase)');
});

test('IP address literals are refused as such', () => {
  for (const p of ['10.0.0.1', '10.0.0.1:443', 'http://127.0.0.1/', '::1', '[::1]', '[2001:db8::1]:8080', '0x7f000001', 'foo.123']) {
    const problem = hostPatternProblem(p);
    assert.ok(problem?.includes('IP address'), `${p}: ${problem}`);
    assert.ok(problem?.includes('like github.com'), `${p}: ${problem}`);
  }
});

test('wildcards that are too broad or misplaced are refused', () => {
  for (const p of ['*', '*.com', '*.', '*com']) {
    assert.match(hostPatternProblem(p) ?? '', /is too broad: a wildcard needs at least two labels after "\*\.", like \*\.github\.com/, p);
  }
  for (const p of ['a.*.com', '*.*.github.com', '*github.com', 'github.*']) {
    assert.match(hostPatternProblem(p) ?? '', /"\*" may only be the whole first label/, p);
  }
});

test('malformed names say what is wrong', () => {
  assert.match(hostPatternProblem('') ?? '', /^"" is not a host name: it is empty; write a name like github\.com/);
  assert.match(hostPatternProblem('foo_bar.com') ?? '', /only lowercase letters, digits, hyphens and dots/);
  assert.match(hostPatternProblem('münchen.de') ?? '', /xn-- form/);
  assert.match(hostPatternProblem('a..b.com') ?? '', /empty label/);
  assert.match(hostPatternProblem('.github.com') ?? '', /empty label/);
  assert.match(hostPatternProblem('-a.com') ?? '', /hyphen/);
  assert.match(hostPatternProblem(`${'a'.repeat(64)}.com`) ?? '', /label longer than 63/);
  assert.match(hostPatternProblem(`${'abcdefghi.'.repeat(26)}com`) ?? '', /longer than 253/);
});

test('exact entries match exactly, whatever the case and one trailing dot', () => {
  const list = ['api.anthropic.com'];
  assert.equal(allows(list, 'api.anthropic.com'), true);
  assert.equal(allows(list, 'API.Anthropic.COM'), true);
  assert.equal(allows(list, 'api.anthropic.com.'), true);
  assert.equal(allows(list, 'api.anthropic.com..'), false);
  assert.equal(allows(list, 'x.api.anthropic.com'), false);
  assert.equal(allows(list, 'anthropic.com'), false);
  assert.equal(allows(list, 'api.anthropic.com.evil.io'), false);
  assert.equal(allows([], 'api.anthropic.com'), false);
});

test('a wildcard matches subdomains at any depth but not the name itself or look-alikes', () => {
  const list = ['*.github.com'];
  assert.equal(allows(list, 'api.github.com'), true);
  assert.equal(allows(list, 'a.b.github.com'), true);
  assert.equal(allows(list, 'API.GitHub.com.'), true);
  assert.equal(allows(list, 'github.com'), false);
  assert.equal(allows(list, 'evilgithub.com'), false);
  assert.equal(allows(list, '.github.com'), false);
  assert.equal(allows(list, 'github.com.evil.io'), false);
  assert.equal(allows(list, '*.github.com'), false);
  assert.equal(allows(['*.github.com', 'github.com'], 'github.com'), true);
});

test('IP literals and hosts with other characters never match', () => {
  const list = ['*.github.com', 'localhost', '10.0.0.1', '*.0.0.1', '[::1]', '::1'];
  for (const h of ['10.0.0.1', '127.0.0.1', '::1', '[::1]', '[::ffff:10.0.0.1]', '0x7f000001', '2130706433', 'x.0.0.1']) {
    assert.equal(allows(list, h), false, h);
  }
  for (const h of ['api_x.github.com', 'api.github.com\u0000', 'api.github.com:443', 'аpi.github.com', 'api.github.com/x', 'a b.github.com', '']) {
    assert.equal(allows(list, h), false, JSON.stringify(h));
  }
  assert.equal(allows(list, 'localhost'), true);
});

test('invalid entries match nothing; entries compare ignoring case', () => {
  assert.equal(allows(['*'], 'github.com'), false);
  assert.equal(allows(['*.com'], 'github.com'), false);
  assert.equal(allows(['https://github.com'], 'github.com'), false);
  assert.equal(allows(['GitHub.com'], 'github.com'), true);
  assert.equal(allows(['*.GitHub.com'], 'api.github.com'), true);
});

test('an entry may name a port; without one, plain HTTP gets 80 and a tunnel 443', () => {
  for (const p of ['x:443', 'git.example.com:8443', '*.example.com:22']) assert.equal(hostPatternProblem(p), undefined, p);
  for (const p of ['x:', 'x:0', 'x:65536', 'x:08', 'x:https']) assert.match(hostPatternProblem(p) ?? '', /a port is a number from 1 to 65535/, p);
  const list = ['cdn-allowed.example', 'git.example.com:8443', '*.pkg.example:8080'];
  assert.deepEqual(portsFor(list, 'cdn-allowed.example'), { http: new Set([80]), tls: new Set([443]) });
  assert.deepEqual(portsFor(list, 'git.example.com'), { http: new Set([8443]), tls: new Set([8443]) });
  assert.deepEqual(portsFor(list, 'a.pkg.example'), { http: new Set([8080]), tls: new Set([8080]) });
  assert.equal(portsFor(list, 'cdn-evil.example'), undefined);
  assert.deepEqual(portsFor(['h.example', 'h.example:8443'], 'h.example')?.tls, new Set([443, 8443]));
});
