/**
 * The servers the credentials tests stand on, checked by hand from a
 * container on their network, without the runner: the private registry
 * (verdaccio, HTTPS from the test's CA) answers 401 without its token and
 * installs @acme/greet with it; the git server (git-http-backend behind our
 * HTTPS front) answers 401 without basic auth, takes a push with it, and
 * records every request that arrived.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { startGitHttps, type GitHttps } from '../fixtures/git-https.js';
import { greeting, startPrivateNpm, type PrivateNpm } from '../fixtures/private-npm.js';
import { startTestCa, type TestCa } from '../fixtures/test-ca.js';
import { makeTestNetwork, onNetwork, type TestNetwork } from '../fixtures/test-network.js';

let net: TestNetwork;
let ca: TestCa & { stop(): void };
let npm: PrivateNpm;
let git: GitHttps;
before(async () => {
  net = makeTestNetwork('servers');
  ca = startTestCa(['npm.company.example', 'git.company.example']);
  npm = await startPrivateNpm({ network: net.network, ca });
  git = startGitHttps({ network: net.network, ca });
}, { timeout: 900_000 });
after(() => {
  npm?.stop();
  git?.stop();
  net?.remove();
  ca?.stop();
});

const said = (out: string) => Object.fromEntries(out.split('\n').filter((l) => /^[a-z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

test('the private registry: 401 without the token, @acme/greet installs with it, over TLS from the test CA', { timeout: 180_000 }, () => {
  const out = onNetwork(
    net.network,
    `R=${npm.url}
echo "anonymous=$(curl -s -o /dev/null -w '%{http_code}' $R@acme%2fgreet)"
echo "bearer=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(cat /secret/token)" $R@acme%2fgreet)"
echo "system_trust=$(env -u CURL_CA_BUNDLE -u SSL_CERT_FILE curl -s -o /dev/null -w '%{http_code}' --cacert /etc/ssl/certs/ca-certificates.crt $R 2>&1; echo " exit $?")"
export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt npm_config_fetch_retries=0
mkdir /tmp/a && cd /tmp/a && echo '{}' > package.json
printf '//npm.company.example/:_authToken=%s\\n' "$(cat /secret/token)" > /tmp/npmrc
echo "without=$(npm install @acme/greet --registry $R --userconfig /dev/null --no-audit --no-fund 2>&1 | grep -c 'npm error')"
npm install @acme/greet --registry $R --userconfig /tmp/npmrc --no-audit --no-fund >/dev/null 2>&1
echo "greet=$(node -e 'console.log(require("@acme/greet")("x"))')"`,
    [`${ca.bundleFile}:/etc/ssl/certs/ca-certificates.crt:ro`, `${writeSecret(npm.token)}:/secret/token:ro`],
  );
  const s = said(out);
  assert.equal(s.anonymous, '401', out);
  assert.equal(s.bearer, '200', out);
  assert.notEqual(s.without, '0', 'npm without the token fails');
  assert.equal(s.greet, greeting('x'), out);
  const reads = npm.requests().filter((r) => r.method === 'GET' && r.url.includes('greet'));
  assert.ok(reads.some((r) => r.user === 'acme' && r.status === 200), JSON.stringify(reads));
  assert.ok(reads.some((r) => r.user === null && r.status === 401), JSON.stringify(reads));
});

test('the git server: 401 without basic auth, a push with it lands, and every request is recorded', { timeout: 180_000 }, () => {
  const out = onNetwork(
    net.network,
    `cd /tmp && git init -q -b main w && cd w && git -c user.name=t -c user.email=t@x commit -q --allow-empty -m one
export GIT_TERMINAL_PROMPT=0
echo "head=$(git rev-parse HEAD)"
git push ${git.repoUrl} main:without >/dev/null 2>&1; echo "without=$?"
git -c credential.helper='!f() { echo username=${git.username}; echo "password=$(cat /secret/token)"; }; f' push ${git.repoUrl} main:feature >/dev/null 2>&1; echo "with=$?"`,
    [`${ca.bundleFile}:/etc/ssl/certs/ca-certificates.crt:ro`, `${writeSecret(git.token)}:/secret/token:ro`],
  );
  const s = said(out);
  assert.notEqual(s.without, '0', out);
  assert.equal(s.with, '0', out);
  assert.deepEqual(git.branches(), { feature: s.head });
  const arrived = git.arrived();
  assert.ok(arrived.some((r) => r.status === 401 && !r.authorized && r.url.includes('git-receive-pack')), JSON.stringify(arrived));
  assert.ok(arrived.some((r) => r.method === 'POST' && r.url === '/acme/app.git/git-receive-pack' && r.authorized && r.user === 'x-access-token' && r.status === 200));
  assert.doesNotMatch(JSON.stringify(arrived), new RegExp(git.token), 'the record never holds the token');
});

/** A secret in a file of the test's own, for a container to read (never in its environment). */
function writeSecret(value: string): string {
  const file = `${ca.dir}/secret-${Math.random().toString(36).slice(2)}`;
  writeFileSync(file, value, { mode: 0o644 });
  return file;
}
