import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { InspectedHost } from '../../src/gateway/config.js';
import { globMatches, MAX_TARGET_LENGTH, normalizeTarget, pathGlobProblem, refusalLine, ruleFor, ruleProblem } from '../../src/gateway/request-rules.js';

const github: InspectedHost = {
  host: 'api.github.com',
  methods: ['GET', 'POST'],
  paths: ['/repos/acme/app/**'],
  rule: '{ host: api.github.com, methods: [GET, POST], paths: ["/repos/acme/app/**"] }',
};

function norm(raw: string): string {
  const t = normalizeTarget(raw);
  assert.ok(!('problem' in t), `${raw}: ${'problem' in t ? t.problem : ''}`);
  return t.query ? `${t.path}?${t.query}` : t.path;
}

function problem(raw: string): string {
  const t = normalizeTarget(raw);
  assert.ok('problem' in t, `${raw} should be refused, got ${JSON.stringify(t)}`);
  return t.problem;
}

/** What the gateway does with a request: normalize, then judge the normalized path. */
function judge(rule: InspectedHost, method: string, raw: string): string | undefined {
  const t = normalizeTarget(raw);
  if ('problem' in t) return t.problem;
  return ruleProblem(rule, method, t.path);
}

test('an ordinary target is kept as it was, its query apart', () => {
  assert.deepEqual(normalizeTarget('/repos/acme/app/issues?state=open&per_page=100'), { path: '/repos/acme/app/issues', query: 'state=open&per_page=100' });
  assert.deepEqual(normalizeTarget('/'), { path: '/', query: '' });
  assert.deepEqual(normalizeTarget('/a?'), { path: '/a', query: '' });
  assert.deepEqual(normalizeTarget('/a/b/'), { path: '/a/b/', query: '' }, 'a trailing slash is kept');
  assert.deepEqual(normalizeTarget('/@acme%2fpkg'), { path: '/@acme%2Fpkg', query: '' }, 'an encoded slash is kept, upper-cased');
});

test('an absolute URL gives its path and query', () => {
  assert.deepEqual(normalizeTarget('http://api.github.com/repos/acme/app?x=1'), { path: '/repos/acme/app', query: 'x=1' });
  assert.deepEqual(normalizeTarget('https://api.github.com:443'), { path: '/', query: '' });
  assert.deepEqual(normalizeTarget('http://h.example?x=/..'), { path: '/', query: 'x=/..' });
  assert.match(problem('api.github.com/repos'), /neither a path starting with "\/" nor an absolute URL/);
  assert.match(problem('*'), /has no path to judge/);
});

test('unreserved characters are decoded, in either case of hex; others are kept upper-cased', () => {
  assert.equal(norm('/%41%62c%2D%2e%5f%7E'), '/Abc-._~');
  assert.equal(norm('/a%20b%3a%3F'), '/a%20b%3A%3F');
  assert.equal(norm('/a%25b'), '/a%25b', 'an encoded percent stays encoded: %252e is not a dot');
  assert.equal(norm('/x?q=%2e%2E'), '/x?q=%2e%2E', 'the query is passed as it was');
});

test('dot segments are resolved, in plain and encoded forms, and refused above the root', () => {
  assert.equal(norm('/repos/acme/app/../../other/x'), '/repos/other/x');
  assert.equal(norm('/repos/acme/%2e%2e/other'), '/repos/other');
  assert.equal(norm('/repos/acme/%2E%2E/other'), '/repos/other');
  assert.equal(norm('/repos/acme/.%2e/other'), '/repos/other');
  assert.equal(norm('/a/./b/.'), '/a/b/');
  assert.equal(norm('/a/b/..'), '/a/');
  assert.equal(norm('/a/..'), '/');
  assert.equal(norm('/.../a'), '/.../a', 'three dots are a name');
  for (const raw of ['/..', '/a/../..', '/%2e%2e/x', '/a/%2E%2E/%2e%2e/etc/passwd', 'http://h/../x']) {
    assert.match(problem(raw), /goes above the root/, raw);
  }
});

test('empty segments are collapsed, so "//" cannot name another host or dodge a glob', () => {
  assert.equal(norm('/repos//acme/app'), '/repos/acme/app');
  assert.equal(norm('//evil.example/x'), '/evil.example/x');
  assert.equal(norm('/a///'), '/a/');
});

test('a dot segment with parameters or next to an encoded separator is refused', () => {
  for (const raw of ['/repos/acme/app/..;/..;/other', '/a/.;x/b', '/a/..%2Fb', '/a/b%2F..', '/a/%2e%2e%5Cb', '/a/.%2F']) {
    assert.match(problem(raw), /dot segment with parameters or an encoded separator/, raw);
  }
  assert.equal(norm('/a;v=1/b;x'), '/a;v=1/b;x', 'other parameters are kept and judged as written');
});

test('backslashes, NULs, bad percent-encodings, fragments and odd characters are refused', () => {
  assert.match(problem('/repos\\acme'), /backslash/);
  assert.match(problem('/repos/acme/app/..\\..\\x'), /backslash/);
  assert.match(problem('/a%00b'), /encoded NUL/);
  assert.match(problem('/a%2'), /"%" not followed by two hex digits \("%2"\)/);
  assert.match(problem('/a%zz'), /"%" not followed by two hex digits/);
  assert.match(problem('/a%u002e'), /"%" not followed by two hex digits/);
  assert.match(problem('/a%C0%AE%C0%AE/x'), /not UTF-8/);
  assert.match(problem('/a%ff'), /not UTF-8/);
  assert.equal(norm('/caf%C3%A9'), '/caf%C3%A9', 'encoded UTF-8 is fine');
  // a dot or separator encoded twice (or more), however it is spelled: a server that decodes twice reads "." or "/"
  for (const raw of ['/a/%252e%252e/x', '/a/%252E./x', '/a%252fb', '/a%255Cb', '/a/%25252e/x', '/a/%25%32%65%25%32%65/x']) assert.match(problem(raw), /encoded twice/, raw);
  assert.equal(norm('/a/%2541'), '/a/%2541', 'a "%" sent encoded before another character is kept');
  assert.match(problem('/a#frag'), /fragment/);
  for (const raw of ['/a b', '/a\tb', '/a\u0000b', '/caf\u00e9', '/a\u007f']) assert.match(problem(raw), /space, control or non-ASCII character/, JSON.stringify(raw));
});

test('a very long target is refused; a long one is judged in bounded time', () => {
  assert.match(problem(`/${'a'.repeat(MAX_TARGET_LENGTH)}`), /more than the 16384/);
  const longest = `/${'a/'.repeat((MAX_TARGET_LENGTH - 2) / 2)}b`;
  const started = performance.now();
  const rule: InspectedHost = { host: 'h', paths: ['/**/a/*a*a*a*a*a*a*c/**', '/a/**/b/**/c', '/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/x'] };
  assert.match(judge(rule, 'GET', longest) ?? '', /matches none of/);
  const stars: InspectedHost = { host: 'h', paths: [`/${'*a'.repeat(100)}c`] };
  assert.match(judge(stars, 'GET', `/${'a'.repeat(MAX_TARGET_LENGTH - 10)}`) ?? '', /matches none of/);
  console.log(`the longest target against star-heavy globs: ${(performance.now() - started).toFixed(1)} ms`);
});

test('the issue\'s attack cases are refused by /repos/acme/app/**, and its own paths allowed', () => {
  for (const raw of ['/repos/acme/app', '/repos/acme/app/', '/repos/acme/app/issues/1', '/repos/acme/app/git/refs/heads/main?x=1', '/repos//acme/app/pulls', '/repos/acme/app/./issues']) {
    assert.equal(judge(github, 'GET', raw), undefined, raw);
  }
  assert.match(judge(github, 'GET', '/repos/acme/app/../../other/x') ?? '', /the path \/repos\/other\/x matches none of \/repos\/acme\/app\/\*\*/);
  assert.match(judge(github, 'GET', '/repos/acme/%2e%2e/other') ?? '', /the path \/repos\/other matches none of/);
  assert.match(judge(github, 'GET', '/repos/acme/app/%2e%2e/%2e%2e/other') ?? '', /the path \/repos\/other matches none of/);
  assert.match(judge(github, 'GET', '/REPOS/acme/app') ?? '', /the path \/REPOS\/acme\/app matches none of/, 'paths are case-sensitive');
  assert.match(judge(github, 'GET', '/repos/acme/app%2F..%2F..%2Fother') ?? '', /dot segment/);
  assert.match(judge(github, 'GET', '/repos/acme/app/x%2Fy') ?? '', /has an encoded "\/" or "\\" \(%2F, %5C\)/);
  assert.match(judge(github, 'GET', '/repos/acme/app/x%2fy') ?? '', /encoded "\/"/);
  assert.match(judge(github, 'GET', '/repos/acme/app/x%5cy') ?? '', /encoded "\/"/);
  assert.match(judge(github, 'GET', '/repos/acme/app;x/../../other') ?? '', /matches none of/);
  assert.match(judge(github, 'GET', '/repos/acme/app/..;/..;/other') ?? '', /dot segment with parameters/);
  assert.equal(judge(github, 'GET', '/repos/acme/app?path=/../../other'), undefined, 'a "/.." in the query is not judged');
  assert.deepEqual(normalizeTarget('/repos/acme/app?path=/../../other'), { path: '/repos/acme/app', query: 'path=/../../other' }, 'and passed as it was');
});

test('methods are upper-cased before judging; one that is not a token is refused whatever the rule', () => {
  assert.equal(ruleProblem(github, 'get', '/repos/acme/app'), undefined);
  assert.equal(ruleProblem(github, 'Post', '/repos/acme/app/issues'), undefined);
  assert.equal(ruleProblem(github, 'DELETE', '/repos/acme/app'), 'the method DELETE is not one of GET, POST');
  assert.equal(ruleProblem(github, 'delete', '/repos/acme/app'), 'the method DELETE is not one of GET, POST');
  assert.equal(ruleProblem(github, 'HEAD', '/repos/acme/app'), 'the method HEAD is not one of GET, POST', 'HEAD is its own method');
  const any: InspectedHost = { host: 'h' };
  for (const m of ['GET ', ' GET', 'G\u0000ET', 'GE T', '', 'GET\r\n', 'G\u00c9T', 'X'.repeat(33)]) {
    assert.match(ruleProblem(any, m, '/') ?? '', /is not an HTTP method/, JSON.stringify(m));
    assert.match(ruleProblem(github, m, '/repos/acme/app') ?? '', /is not an HTTP method/, JSON.stringify(m));
  }
  assert.equal(ruleProblem(any, 'PROPFIND', '/anything'), undefined, 'no methods: any');
  assert.equal(ruleProblem({ host: 'h', methods: ['GET'] }, 'GET', '/any/path'), undefined, 'no paths: any');
});

test('"*" matches within one segment, never across "/", and dots are plain characters', () => {
  assert.equal(globMatches('/repos/*/app', '/repos/acme/app'), true);
  assert.equal(globMatches('/repos/*/app', '/repos/acme/x/app'), false);
  assert.equal(globMatches('/repos/*', '/repos/'), true, '"*" matches an empty segment');
  assert.equal(globMatches('/repos/*', '/repos'), false);
  assert.equal(globMatches('/files/*.tgz', '/files/app-1.0.0.tgz'), true);
  assert.equal(globMatches('/files/*.tgz', '/files/.tgz'), true);
  assert.equal(globMatches('/files/*.tgz', '/files/a/b.tgz'), false);
  assert.equal(globMatches('/files/*.tgz', '/files/abctgz'), false, 'a dot is a dot, not any character');
  assert.equal(globMatches('/*', '/.hidden'), true, 'dotfiles are ordinary names');
  assert.equal(globMatches('/a*b*c', '/aXbYbZc'), true);
  assert.equal(globMatches('/a*b*c', '/aXbYbZ'), false);
  assert.equal(globMatches('/a/*', '/a/x%2Fy'), false, '"*" never matches an encoded slash');
  assert.equal(globMatches('/a/*', '/a/x%5Cy'), false, 'nor an encoded backslash');
  assert.equal(globMatches('/a/b', '/a/B'), false, 'case-sensitive');
});

test('"**" matches any number of segments, none included, so /x/** allows /x itself', () => {
  const g = '/repos/acme/app/**';
  for (const p of ['/repos/acme/app', '/repos/acme/app/', '/repos/acme/app/issues', '/repos/acme/app/issues/1/comments']) assert.equal(globMatches(g, p), true, p);
  for (const p of ['/repos/acme/application', '/repos/acme', '/repos/acme/ap', '/repos/acme/app.git', '/repos/acme/app/x%2Fy']) assert.equal(globMatches(g, p), false, p);
  assert.equal(globMatches('/**', '/'), true);
  assert.equal(globMatches('/**', '/anything/at/all'), true);
  assert.equal(globMatches('/a/**/z', '/a/z'), true);
  assert.equal(globMatches('/a/**/z', '/a/b/c/z'), true);
  assert.equal(globMatches('/a/**/z', '/a/b/c/zz'), false);
  assert.equal(globMatches('/a/**/*.git/**', '/a/b/c.git/info/refs'), true);
  assert.equal(globMatches('/acme/app.git/**', '/acme/app.git/info/refs'), true);
  assert.equal(globMatches('/acme/app.git/**', '/acme/app.git/git-receive-pack'), true);
  assert.equal(globMatches('/acme/app.git/**', '/acme/other.git/info/refs'), false);
});

test('a glob may write an encoded slash, matched only there (npm\'s scoped packages)', () => {
  const npm: InspectedHost = { host: 'npm.company.example', paths: ['/@acme%2f*', '/@acme/*/-/*.tgz'] };
  assert.equal(judge(npm, 'GET', '/@acme%2fpkg'), undefined);
  assert.equal(judge(npm, 'GET', '/@acme%2Fpkg'), undefined);
  assert.equal(judge(npm, 'GET', '/@acme/pkg/-/pkg-1.0.0.tgz'), undefined);
  assert.match(judge(npm, 'GET', '/@other%2fpkg') ?? '', /encoded "\/"/);
  assert.match(judge(npm, 'GET', '/@acme%2fpkg%2f..%2f..%2fadmin') ?? '', /dot segment/);
  assert.match(judge(npm, 'GET', '/@acme%2fpkg%2fx') ?? '', /encoded "\/"/, '"*" does not match past a second encoded slash');
  assert.equal(globMatches('/%7euser/%61', '/~user/a'), true, 'a glob is normalized as a path is');
});

test('globs are checked for the loader', () => {
  for (const g of ['/', '/**', '/repos/acme/app/**', '/a/*.tgz', '/@acme%2F*', '/a/']) assert.equal(pathGlobProblem(g), undefined, g);
  assert.match(pathGlobProblem('repos/**') ?? '', /must start with "\/"/);
  assert.match(pathGlobProblem('/a?x=1') ?? '', /query and fragment are not judged/);
  assert.match(pathGlobProblem('/a//b') ?? '', /empty segment/);
  assert.match(pathGlobProblem('/a/../b') ?? '', /a "\.\." segment/);
  assert.match(pathGlobProblem('/a/**b') ?? '', /"\*\*" must be a whole segment/);
  assert.match(pathGlobProblem('/a\\b') ?? '', /backslash/);
  assert.match(pathGlobProblem('/a%zz') ?? '', /percent-encoding/);
  assert.match(pathGlobProblem('/a b') ?? '', /space/);
  assert.match(pathGlobProblem(`/${'a'.repeat(1024)}`) ?? '', /longer than 1024/);
});

test('the rule for a host: exact names first, then the longest "*." suffix', () => {
  const hosts: InspectedHost[] = [{ host: '*.example.com' }, { host: '*.api.example.com' }, { host: 'api.example.com' }, { host: 'github.com' }];
  assert.equal(ruleFor(hosts, 'api.example.com'), hosts[2]);
  assert.equal(ruleFor(hosts, 'API.Example.com.'), hosts[2], 'a trailing dot and any case name the same host');
  assert.equal(ruleFor(hosts, 'v1.api.example.com'), hosts[1]);
  assert.equal(ruleFor(hosts, 'www.example.com'), hosts[0]);
  assert.equal(ruleFor(hosts, 'example.com'), undefined, 'a wildcard does not match its own name');
  assert.equal(ruleFor(hosts, 'GitHub.com'), hosts[3]);
  assert.equal(ruleFor(hosts, 'api.github.com'), undefined);
  assert.equal(ruleFor(hosts, 'notexample.com'), undefined);
  assert.equal(ruleFor([], 'github.com'), undefined);
});

test('the refusal is one line: what was refused, what the entry allows, and how to allow more', () => {
  const line = refusalLine('api.github.com', 'delete', '/repos/acme/app', github, 'the method DELETE is not one of GET, POST');
  assert.equal(
    line,
    'runner gateway: DELETE api.github.com/repos/acme/app refused (the method DELETE is not one of GET, POST); its egress entry { host: api.github.com, methods: [GET, POST], paths: ["/repos/acme/app/**"] } allows GET, POST on /repos/acme/app/**; to allow more, add the method or path to that entry\'s methods: or paths: in the pipeline file\n',
  );
  const bare = refusalLine('h.example', 'G\u0000ET', '/x', { host: 'h.example', paths: ['/a/**'] }, 'the method "G\\u0000ET" is not an HTTP method');
  assert.equal(bare.split('\n').length, 2, 'one line');
  assert.match(bare, /^runner gateway: "G\\u0000ET" h\.example\/x refused .*its egress entry \{ host: h\.example, paths: \["\/a\/\*\*"\] \} allows any method on \/a\/\*\*;/);
  const long = refusalLine('h', 'GET', `/${'a'.repeat(5000)}`, { host: 'h', rule: 'two\nlines' }, 'r');
  assert.ok(long.length < 600, 'a long path is shortened');
  assert.equal(long.indexOf('\n'), long.length - 1, 'a rule written on two lines is said on one');
});
