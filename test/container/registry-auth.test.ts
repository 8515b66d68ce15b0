/** Which credentials an image is pulled with, as the docker CLI finds them in a config.json; what a refused pull says. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { authSource, configKey, engineReason, HUB, HUB_KEY, helperAnswer, helperHasNone, helperSaid, imageRegistry, isAuthRefusal, keyRegistry, parseDockerConfig, pullRefused } from '../../src/container/registry-auth.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

test('the registry an image names, as the docker CLI normalises it', () => {
  for (const [image, registry] of [
    ['node', HUB],
    ['node:20', HUB],
    ['library/node:20', HUB],
    ['team/tool@sha256:abc', HUB],
    ['docker.io/team/tool', HUB],
    ['index.docker.io/team/tool:1', HUB],
    ['registry.company.example/tools/lint:3', 'registry.company.example'],
    ['127.0.0.1:5000/runner-test/x:1', '127.0.0.1:5000'],
    ['localhost/x', 'localhost'],
    ['localhost:5000/x', 'localhost:5000'],
    ['Registry/x', 'Registry'],
    ['ghcr.io/org/img', 'ghcr.io'],
  ] as const) assert.equal(imageRegistry(image), registry, image);
  assert.equal(configKey(HUB), HUB_KEY);
  assert.equal(configKey('ghcr.io'), 'ghcr.io');
  for (const key of ['https://index.docker.io/v1/', 'docker.io', 'index.docker.io', 'https://registry-1.docker.io']) assert.equal(keyRegistry(key), HUB, key);
  assert.equal(keyRegistry('https://reg.example:5000/v2/'), 'reg.example:5000');
  assert.equal(keyRegistry('http://reg.example'), 'reg.example');
});

test("a config's auths: base64 auth, username and password, identity token; keys found as the docker CLI finds them", () => {
  const config = parseDockerConfig(
    JSON.stringify({
      auths: {
        'https://index.docker.io/v1/': { auth: b64('hubuser:hub:pass') },
        'https://reg.example:5000/v1/': { username: 'u', password: 'p' },
        'id.example': { identitytoken: 'tok' },
        'empty.example': {},
      },
      proxies: { default: { httpProxy: 'http://x' } },
    }),
    '/c.json',
  );
  assert.deepEqual(authSource(config, HUB, '/c.json'), { kind: 'file', auth: { username: 'hubuser', password: 'hub:pass', serveraddress: HUB_KEY } });
  assert.deepEqual(authSource(config, 'reg.example:5000', '/c.json'), { kind: 'file', auth: { username: 'u', password: 'p', serveraddress: 'reg.example:5000' } });
  assert.deepEqual(authSource(config, 'id.example', '/c.json'), { kind: 'file', auth: { identitytoken: 'tok', serveraddress: 'id.example' } });
  assert.deepEqual(authSource(config, 'empty.example', '/c.json'), { kind: 'none' });
  assert.deepEqual(authSource(config, 'other.example', '/c.json'), { kind: 'none' });
  // Hub's credentials under a key docker login does not write, but a person might
  const hand = parseDockerConfig(JSON.stringify({ auths: { 'docker.io': { auth: b64('a:b') } } }), '/c.json');
  assert.deepEqual(authSource(hand, HUB, '/c.json'), { kind: 'file', auth: { username: 'a', password: 'b', serveraddress: HUB_KEY } });
});

test('credHelpers for a registry first, then credsStore, then the file: the server URL the docker CLI asks a helper for', () => {
  const config = parseDockerConfig(
    JSON.stringify({ auths: { 'reg.example': { auth: b64('a:b') } }, credHelpers: { 'gcr.io': 'gcloud', 'https://index.docker.io/v1/': 'hubhelper' }, credsStore: 'desktop' }),
    '/c.json',
  );
  assert.deepEqual(authSource(config, 'gcr.io', '/c.json'), { kind: 'helper', helper: 'gcloud', field: 'credHelpers', serverUrl: 'gcr.io' });
  assert.deepEqual(authSource(config, HUB, '/c.json'), { kind: 'helper', helper: 'hubhelper', field: 'credHelpers', serverUrl: HUB_KEY });
  // with a credsStore, the store answers for every other registry (the file's auth is not used), as in the docker CLI
  assert.deepEqual(authSource(config, 'reg.example', '/c.json'), { kind: 'helper', helper: 'desktop', field: 'credsStore', serverUrl: 'reg.example' });
  const noStore = parseDockerConfig(JSON.stringify({ auths: { 'reg.example': { auth: b64('a:b') } }, credHelpers: { 'gcr.io': 'gcloud' } }), '/c.json');
  assert.equal(authSource(noStore, 'reg.example', '/c.json').kind, 'file');
});

test('a config that is not one is said with where and what, never with a value from it', () => {
  assert.throws(() => parseDockerConfig('{"auths": ', '/x/config.json'), /\/x\/config\.json is not JSON .*shape of a docker config\.json/);
  assert.throws(() => parseDockerConfig('[]', '/x/config.json'), /holds no JSON object/);
  assert.throws(() => parseDockerConfig('{"auths": []}', '/x/c.json'), /"auths" is not an object/);
  assert.throws(() => parseDockerConfig('{"auths": {"r": {"auth": 5}}}', '/x/c.json'), /auths\["r"\]\.auth is not a string/);
  assert.throws(() => parseDockerConfig('{"credHelpers": {"r": "../../bin/sh"}}', '/x/c.json'), /credHelpers\["r"\] is not a helper's name/);
  assert.throws(() => parseDockerConfig('{"credsStore": "a b"}', '/x/c.json'), /"credsStore" is not a helper's name/);
  assert.deepEqual(parseDockerConfig('{}', '/x'), { auths: {}, credHelpers: {} });
  assert.deepEqual(parseDockerConfig('{"credsStore": ""}', '/x'), { auths: {}, credHelpers: {} });
  const bad = parseDockerConfig(JSON.stringify({ auths: { r: { auth: 'secretnotbase64!' } } }), '/x/c.json');
  const s = authSource(bad, 'r', '/x/c.json');
  assert.equal(s.kind, 'problem');
  assert.match(s.kind === 'problem' ? s.problem : '', /^the "auth" of r in \/x\/c\.json is not base64 of USER:PASSWORD: log in again \(docker login r\)/);
  assert.doesNotMatch(JSON.stringify(s), /secretnotbase64/);
});

test("a helper's answer: user and secret, or an identity token under the docker CLI's <token> user; its 'not found'", () => {
  assert.deepEqual(helperAnswer('{"ServerURL":"r","Username":"u","Secret":"s"}', 'r'), { username: 'u', password: 's', serveraddress: 'r' });
  assert.deepEqual(helperAnswer('{"ServerURL":"r","Username":"<token>","Secret":"t"}', 'r'), { identitytoken: 't', serveraddress: 'r' });
  assert.equal(helperAnswer('not json', 'r'), undefined);
  assert.equal(helperAnswer('{"Username":"u"}', 'r'), undefined);
  assert.equal(helperHasNone('credentials not found in native keychain\n'), true);
  assert.equal(helperHasNone('error: cannot reach the keychain'), false);
});

test('a pull refused for want of credentials: told from other failures, said with the registry and how to log in', () => {
  for (const m of ['unauthorized: authentication required', 'Head "https://r/v2/x/manifests/1": no basic auth credentials', "pull access denied for x, repository does not exist or may require 'docker login': denied: requested access to the resource is denied"]) {
    assert.equal(isAuthRefusal(m, false), true, m);
    assert.equal(isAuthRefusal(m, true), true, m);
  }
  // an engine falling back to plain http for an insecure registry says the http attempt's failure
  const fallback = 'error parsing HTTP 400 response body: invalid character \'C\' looking for beginning of value: "Client sent an HTTP request to an HTTPS server.\\n"';
  assert.equal(isAuthRefusal(fallback, false), true);
  assert.equal(isAuthRefusal(fallback, true), false);
  assert.equal(isAuthRefusal('manifest for x:1 not found: manifest unknown', false), false);
  assert.equal(isAuthRefusal('dial tcp 10.0.0.1:443: connect: connection refused', false), false);

  assert.equal(engineReason('(HTTP code 500) server error - unauthorized: authentication required \n'), 'unauthorized: authentication required');
  const client = { configFile: '/home/u/.docker/config.json', fromFlag: false };
  const none = pullRefused('127.0.0.1:5000/t/x:1', '127.0.0.1:5000', 'no basic auth credentials', client);
  assert.match(none, /^the registry 127\.0\.0\.1:5000 wants credentials to pull 127\.0\.0\.1:5000\/t\/x:1, and the runner has none for it \(the engine said: no basic auth credentials\)/);
  assert.match(none, /log in with `docker login 127\.0\.0\.1:5000` \(the runner reads what the docker client reads: \/home\/u\/\.docker\/config\.json and its credential helpers\), or .*--registry-auth FILE$/);
  assert.doesNotMatch(pullRefused('r/x', 'r', fallback, client), /engine said|HTTPS server/, 'the http fallback\'s words are not repeated');
  const hub = pullRefused('team/typo:1', HUB, "pull access denied for team/typo, repository does not exist or may require 'docker login': denied: requested access to the resource is denied", client);
  assert.match(hub, /^the registry docker\.io gives no team\/typo:1 without credentials: it does not exist there, or it needs them \(the engine said: pull access denied .*\): check the image's name, or log in with `docker login`/);
  const wrong = pullRefused('x', HUB, 'unauthorized', client, '/home/u/.docker/config.json');
  assert.match(wrong, /the registry docker\.io refused the credentials for it from \/home\/u\/\.docker\/config\.json to pull x \(unauthorized\): log in again with `docker login`/);
  const flag = pullRefused('r/x', 'r', 'unauthorized', { configFile: '/etc/runner/auth.json', fromFlag: true });
  assert.match(flag, /give r's credentials in \/etc\/runner\/auth\.json \(--registry-auth; a docker config\.json: `docker login r` writes them/);
  const helper = pullRefused('r/x', 'r', 'unauthorized', client, undefined, 'the credential helper docker-credential-gone (credsStore in /c.json) is not on this PATH');
  assert.match(helper, /refused to give r\/x without credentials, and none could be had: the credential helper docker-credential-gone .* is not on this PATH\. Then log in with `docker login r`/);
});

// Attacks on the private-images feature (a hostile step author, a careless user): each one that broke, fixed.

test('a config that is not JSON is said by where it stops, never with its text (Node quotes it: /etc/shadow behind a symlink, a secret)', () => {
  const shadow = 'root:$y$j9T$SHADOWHASH:19000:0:99999:7:::';
  for (const text of [shadow, '{"auths":{"r":{"auth":TOPSECRET}}}', '{"auths":{"r":{"auth":"TOPSECRET"}}} trailing', '{"auths":{"r":{"auth":"TOPSECRET"']) {
    let said = '';
    assert.throws(() => parseDockerConfig(text, '/x/config.json'), (err: Error) => ((said = err.message), true));
    assert.match(said, /^\/x\/config\.json is not JSON \(it (stops at character \d+|ends too soon|holds something JSON does not allow)\)/);
    assert.doesNotMatch(said, /TOPSECRET|SHADOW|root:/, said);
  }
});

test("an image naming Object's own keys (toString/x, __proto__) finds no helper or entry that the file does not name", () => {
  const config = parseDockerConfig('{"credHelpers": {"__proto__": "evil"}, "auths": {"__proto__": {"auth": "dTpw"}}}', '/x/c.json');
  assert.deepEqual(Object.getPrototypeOf(config.auths), Object.prototype, 'a "__proto__" key is not taken as the map\'s prototype');
  for (const registry of ['toString', 'constructor.x', 'hasOwnProperty', 'valueOf', 'reg.example']) {
    assert.deepEqual(authSource(config, registry, '/x/c.json'), { kind: 'none' }, registry);
    assert.equal(imageRegistry(`${registry}/x`), registry);
  }
});

test("credentials for one registry are never looked up for another: look-alike names get none of them", () => {
  const config = parseDockerConfig(JSON.stringify({ auths: { '127.0.0.1:5000': { auth: Buffer.from('a:pw').toString('base64') } }, credHelpers: { 'a.example': 'helper' } }), '/x/c.json');
  const looks = ['127.0.0.1:5000@evil', 'evil.example/127.0.0.1:5000/x', '127.0.0.1:50000/x', '127.0.0.1/x', '127.0.0.1:5000.evil.example/x', 'https://127.0.0.1:5000/x', 'evil.example/a.example/x', 'a.example.evil/x', 'A.EXAMPLE.evil/x'];
  for (const image of looks) {
    const registry = imageRegistry(image);
    assert.notEqual(registry, '127.0.0.1:5000', image);
    assert.notEqual(registry, 'a.example', image);
    assert.deepEqual(authSource(config, registry, '/x/c.json'), { kind: 'none' }, image);
  }
  // a name that differs only in case, or by a trailing dot, is another name: it gets none (docker sends none either)
  for (const image of ['A.example/x', 'a.example./x']) assert.deepEqual(authSource(config, imageRegistry(image), '/x/c.json'), { kind: 'none' }, image);
  assert.equal(authSource(config, imageRegistry('127.0.0.1:5000/x'), '/x/c.json').kind, 'file');
});

test("what a failed helper said is repeated, but never its JSON answer or the secret in it", () => {
  assert.equal(helperSaid('', 'the keychain is locked\nmore'), 'the keychain is locked');
  assert.equal(helperSaid('error getting credentials - err: exit status 1', ''), 'error getting credentials - err: exit status 1');
  assert.equal(helperSaid('', ''), undefined);
  const answer = '{"ServerURL":"r","Username":"u","Secret":"TOPSECRET"}';
  for (const [stdout, stderr] of [[answer, ''], [answer, 'failed with TOPSECRET'], ['', answer], ['  {"Secret": "TOPSECRET"}', ''], ['oops "Secret":"TOPSECRET"', '']] as const) {
    const said = helperSaid(stdout, stderr) ?? '';
    assert.doesNotMatch(said, /TOPSECRET/, `${stdout} / ${stderr}`);
    assert.match(said, /not repeated here: it may hold the credential/);
  }
  assert.equal(helperSaid('', 'x'.repeat(1000))?.length, 200);
});
