import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isUnknownManifest, nodePullHint, ownRepoTag, parseRegistry, pinImage, pinnedRef, recordedDigests, registryTagRef, registryTrouble } from '../../src/container/registry-names.js';

const D1 = `sha256:${'1'.repeat(64)}`;
const D2 = `sha256:${'2'.repeat(64)}`;
const REG = '10.213.7.1:5000';

test('a registry is HOST:PORT or a name the engine reads as a registry; a URL or a bare word is refused with what to give', () => {
  for (const [given, want] of [
    ['10.213.7.1:5000', '10.213.7.1:5000'],
    [' Registry.Example.com:5000 ', 'registry.example.com:5000'],
    ['registry.example.com', 'registry.example.com'],
    ['localhost', 'localhost'],
    ['localhost:5000', 'localhost:5000'],
    ['[fd00::1]:5000', '[fd00::1]:5000'],
    ['reg:443', 'reg:443'],
  ]) assert.equal(parseRegistry(given!), want, given);
  assert.throws(() => parseRegistry('http://10.213.7.1:5000'), /not a URL.*insecure-registries/);
  assert.throws(() => parseRegistry('https://reg.example.com'), /not a URL/);
  assert.throws(() => parseRegistry('registry'), /Docker Hub namespace; give HOST:PORT/);
  assert.throws(() => parseRegistry('10.213.7.1:99999'), /HOST:PORT/);
  assert.throws(() => parseRegistry('10.213.7.1:5000/runner'), /HOST:PORT/);
  assert.throws(() => parseRegistry(''), /HOST:PORT/);
  assert.throws(() => parseRegistry('-bad:5000'), /HOST:PORT/);
});

test("an own image's repository and tag, and its names in the registry", () => {
  assert.deepEqual(ownRepoTag('runner/base:latest'), { repo: 'runner/base', tag: 'latest' });
  assert.deepEqual(ownRepoTag('runner/base'), { repo: 'runner/base', tag: 'latest' });
  assert.deepEqual(ownRepoTag('docker.io/runner/claude-code:2.1.330'), { repo: 'runner/claude-code', tag: '2.1.330' });
  assert.deepEqual(ownRepoTag('index.docker.io/runner/codex'), { repo: 'runner/codex', tag: 'latest' });
  assert.equal(ownRepoTag(`runner/base@${D1}`), undefined);
  assert.equal(registryTagRef(REG, 'runner/base', 'latest'), '10.213.7.1:5000/runner/base:latest');
  assert.equal(pinnedRef(REG, 'runner/base', D1), `10.213.7.1:5000/runner/base@${D1}`);
});

test('the digests this engine recorded for an image in one registry and repository, and none from elsewhere', () => {
  const repoDigests = [
    `${REG}/runner/base@${D1}`,
    `10.213.7.1:5001/runner/base@${D2}`,
    `${REG}/runner/base-extra@${D2}`,
    `${REG}/runner/base@sha256:short`,
    `runner/base@${D2}`,
    `${REG}/runner/base@${D2}`,
  ];
  assert.deepEqual(recordedDigests(repoDigests, REG, 'runner/base'), [D1, D2]);
  assert.deepEqual(recordedDigests(undefined, REG, 'runner/base'), []);
});

test('a job pins the registry\'s digest only when this engine recorded it for exactly this image', () => {
  const image = 'runner/base:latest';
  const imageId = `sha256:${'a'.repeat(64)}`;
  const ok = pinImage({ image, registry: REG, imageId, repoDigests: [`${REG}/runner/base@${D1}`], remote: D1 });
  assert.deepEqual(ok, { ok: true, ref: `${REG}/runner/base@${D1}`, digest: D1 });

  const missing = pinImage({ image, registry: REG, imageId, repoDigests: [`${REG}/runner/base@${D1}`], remote: undefined });
  assert.equal(missing.ok, false);
  assert.equal(!missing.ok && missing.reason, 'not_pushed');
  assert.match(!missing.ok ? missing.message : '', /not in the registry 10\.213\.7\.1:5000 \(no 10\.213\.7\.1:5000\/runner\/base:latest\).*push it first: runner images push --registry 10\.213\.7\.1:5000 runner\/base:latest$/);

  // the tag moved (pushed at another version, or by someone else): the digest this engine knows is not the tag's
  const other = pinImage({ image, registry: REG, imageId, repoDigests: [`${REG}/runner/base@${D1}`], remote: D2 });
  assert.equal(!other.ok && other.reason, 'other_image');
  assert.match(!other.ok ? other.message : '', /registry's 10\.213\.7\.1:5000\/runner\/base:latest \(sha256:2222.*\) is not this engine's runner\/base:latest \(sha256:aaaa.*another version.*runner images push --registry 10\.213\.7\.1:5000 runner\/base:latest$/);

  // never pushed from here (a rebuilt image has no RepoDigests): refused though the registry has the tag
  const rebuilt = pinImage({ image, registry: REG, imageId, repoDigests: [], remote: D1 });
  assert.equal(!rebuilt.ok && rebuilt.reason, 'other_image');
  // the same digest recorded for another registry does not count
  assert.equal(pinImage({ image, registry: REG, imageId, repoDigests: [`10.0.0.9:5000/runner/base@${D1}`], remote: D1 }).ok, false);

  const byDigest = pinImage({ image: `runner/base@${D1}`, registry: REG, imageId, repoDigests: [], remote: D1 });
  assert.match(!byDigest.ok ? byDigest.message : '', /name the runner's own images by tag/);
});

test("the engine's words about a registry become what to do", () => {
  const cases: Array<[string, RegExp]> = [
    ['Get "https://10.213.7.1:5000/v2/": http: server gave HTTP response to HTTPS client', /plain HTTP and this engine does not trust it: add it to "insecure-registries" in \/etc\/docker\/daemon\.json .*every node/],
    ['Get "https://10.213.7.1:5000/v2/": x509: certificate signed by unknown authority', /put the CA that signed it at \/etc\/docker\/certs\.d\/10\.213\.7\.1:5000\/ca\.crt/],
    ['Get "https://10.213.7.1:5000/v2/": x509: cannot validate certificate for 10.213.7.1 because it doesn\'t contain any IP SANs', /does not name that address/],
    ['Get "https://10.213.7.1:5000/v2/": dial tcp 10.213.7.1:5000: connect: connection refused', /nothing answers at 10\.213\.7\.1:5000: start the registry \(scripts\/swarm-lab\.sh up/],
    ['Get "https://10.9.9.9:5000/v2/": dial tcp 10.9.9.9:5000: i/o timeout', /cannot be reached from this engine/],
    ['Get "https://reg.invalid:5000/v2/": dial tcp: lookup reg.invalid: no such host', /cannot resolve/],
    ['no basic auth credentials', /wants credentials, or refused/],
    ['unauthorized: authentication required', /wants credentials, or refused the ones it was given: log in with `docker login \S+`/],
  ];
  for (const [msg, want] of cases) assert.match(registryTrouble(REG, msg) ?? '', want, msg);
  assert.equal(registryTrouble(REG, 'manifest unknown: manifest unknown'), undefined);
  assert.equal(isUnknownManifest('errors:\nmanifest unknown: manifest unknown'), true);
  assert.equal(isUnknownManifest('name unknown: repository name not known to registry'), true);
  assert.equal(isUnknownManifest('dial tcp 10.213.7.1:5000: connect: connection refused'), false);
});

test("a node's failed pull names the registry and what the node needs", () => {
  const hint = nodePullHint(REG, 'runner/base:latest', `${REG}/runner/base@${D1}`);
  assert.match(hint, /pulls it from 10\.213\.7\.1:5000 \(runner\/base:latest pushed there\)/);
  assert.match(hint, /\/etc\/docker\/certs\.d\/10\.213\.7\.1:5000\/ca\.crt, or insecure-registries/);
});
