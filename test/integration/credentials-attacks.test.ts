/**
 * Credentials attacked by a hostile step, for real (issue 33): a step behind
 * its gateway, with a credential for the test's git server over HTTPS
 * (git-http-backend, test/fixtures/git-https.ts) and a method and path rule,
 * tries what a poisoned agent would: reach the host by a name the gateway
 * might not read (a trailing dot, upper case), over plain HTTP so the
 * credential crosses the wire in clear, with a method override header, with
 * a path encoded twice; and looks for the credential's value in its
 * environment, /proc, its files and the CA bundle it was given, and in every
 * answer the gateway made; and the same through runner serve's API, whose
 * answers (run, log, list, metrics) hold the credential's name at most. Every attempt is refused and nothing of it
 * arrives; the value is nowhere the step, or the run's records, can read.
 * (Engine-free attacks on the same code: test/gateway/inspected-attacks.test.ts.)
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startGitHttps, type GitHttps } from '../fixtures/git-https.js';
import { execPipeline, projectsForThisFile, serveFolder, until, writePipeline } from '../fixtures/project.js';
import { startTestCa, type TestCa } from '../fixtures/test-ca.js';
import { makeTestNetwork, type TestNetwork } from '../fixtures/test-network.js';

const fixture = projectsForThisFile();
let net: TestNetwork;
let ca: TestCa & { stop(): void };
let server: GitHttps;
before(() => {
  net = makeTestNetwork('cred-attacks');
  ca = startTestCa(['git.company.example']);
  server = startGitHttps({ network: net.network, ca });
}, { timeout: 300_000 });
after(() => {
  server?.stop();
  net?.remove();
  ca?.stop();
});

const said = (log: string) => Object.fromEntries(log.split('\n').filter((l) => /^[a-z0-9_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

test('a hostile step cannot get the credential past its host, its rules or its gateway, nor read it anywhere', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const mark = `atk-${randomBytes(4).toString('hex')}`;
  const token = server.token;
  const pattern = `[${token[0]}]${token.slice(1)}`;
  const file = await writePipeline(f, `version: 1
name: attacks
project: { path: project, push: never }
secrets: [GIT_TOKEN]
credentials:
  company-git:
    hosts: [git.company.example]
    basic: { username: x-access-token, password: "\${GIT_TOKEN}" }
steps:
  - id: attack
    image: runner/toolchain:latest
    timeout: 2m
    credentials: [company-git]
    egress: [{ host: git.company.example, methods: [GET, POST], paths: ["/acme/app.git/**"] }]
    run: |
      probe() {
        name=$1; shift
        code=$(curl -s --path-as-is -o /tmp/body.$name -w '%{http_code}' -m 20 "$@")
        echo "$name=$code|$(head -n 1 /tmp/body.$name | cut -c1-300)"
      }
      probe control 'https://git.company.example/acme/app.git/info/refs?service=git-upload-pack&m=${mark}-control'
      probe dot_rule -X DELETE 'https://git.company.example./acme/app.git/info/refs?m=${mark}'
      probe dot_path 'https://git.company.example./acme/other.git/info/refs?m=${mark}'
      probe upper_path 'https://GIT.COMPANY.EXAMPLE/acme/other.git/info/refs?m=${mark}'
      probe plain 'http://git.company.example/acme/app.git/info/refs?m=${mark}'
      probe plain_dot 'http://git.company.example./acme/app.git/info/refs?m=${mark}'
      probe override -X POST -H 'X-HTTP-Method-Override: DELETE' 'https://git.company.example/acme/app.git/info/refs?m=${mark}'
      probe double 'https://git.company.example/acme/app.git/%252e%252e/other.git/info/refs?m=${mark}'
      probe host_header -H 'Host: other.example' 'https://git.company.example/acme/app.git/info/refs?m=${mark}-host'
      found=0
      env | grep -q '${pattern}' && found=$((found+1))
      for p in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < "$p" 2>/dev/null | grep -q '${pattern}' && found=$((found+1)); done
      grep -rqs '${pattern}' /home /tmp /etc /run /root /var/tmp . 2>/dev/null && found=$((found+1))
      echo "found=$found"
      echo "ca=$(grep -c 'BEGIN CERTIFICATE' /run/runner/ca.pem) $(grep -c 'PRIVATE KEY' /run/runner/ca.pem)"
`);
  const r = await execPipeline(f, file, [...net.egressFlags, '--ca-file', ca.bundleFile], { env: { GIT_TOKEN: token } });
  const log = r.json ? readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'attack.log'), 'utf8') : r.stderr + r.stdout;
  assert.equal(r.code, 0, `${log}\n${r.stderr}`);
  const s = said(log);
  assert.match(s.control!, /^200\|/, `the control: the credential added on its host: ${log}`);
  for (const name of ['dot_rule', 'dot_path', 'upper_path', 'override']) assert.match(s[name]!, /^403\|runner gateway/, `${name}: ${s[name]}`);
  assert.match(s.double!, /^40[03]\|runner gateway/, `double: ${s.double}`);
  for (const name of ['plain', 'plain_dot']) assert.match(s[name]!, /^403\|runner gateway: git\.company\.example refused \(plain HTTP to a host with a credential/, `${name}: ${s[name]}`);
  // a Host header naming another site: the request goes to the host checked, with its credential, and nowhere else
  assert.match(s.host_header!, /^200\|/, s.host_header);
  assert.equal(s.found, '0', `the value is nowhere the step can read: ${log}`);
  assert.match(s.ca!, /^[1-9]\d* 0$/, 'the bundle the step got holds certificates, no key');
  const arrived = server.arrived().filter((q) => q.url.includes(mark));
  assert.deepEqual(
    arrived.map((q) => q.url).sort(),
    [`/acme/app.git/info/refs?m=${mark}-host`, `/acme/app.git/info/refs?service=git-upload-pack&m=${mark}-control`].sort(),
    'only the control and the Host-header request arrived',
  );
  assert.ok(arrived.every((q) => q.authorized && q.method === 'GET' && q.headers.host === 'git.company.example'), JSON.stringify(arrived));
  // the run's records: the credential's name, never its value
  const runDir = path.join(f.home, 'runs', r.json.runId);
  const texts = [readFileSync(path.join(runDir, 'events.jsonl'), 'utf8'), readFileSync(path.join(runDir, 'run.json'), 'utf8'), ...readdirSync(path.join(runDir, 'steps'), { withFileTypes: true }).filter((d) => d.isFile()).map((d) => readFileSync(path.join(runDir, 'steps', d.name), 'utf8'))];
  for (const t of texts) assert.ok(!t.includes(token) && !t.includes(Buffer.from(`x-access-token:${token}`).toString('base64')), 'no record holds the value');
  const events = readFileSync(path.join(runDir, 'events.jsonl'), 'utf8');
  assert.match(events, /egress_refused/);
});

test("through runner serve's API: the credential holds the same, and no answer of the API holds its value", { timeout: 300_000 }, async () => {
  const f = await fixture();
  const mark = `door-${randomBytes(4).toString('hex')}`;
  const token = server.token;
  const file = `version: 1
name: door
project: { path: ${f.project}, push: never }
secrets: [GIT_TOKEN]
credentials:
  company-git:
    hosts: [git.company.example]
    basic: { username: x-access-token, password: "\${GIT_TOKEN}" }
steps:
  - id: door
    image: runner/toolchain:latest
    timeout: 2m
    credentials: [company-git]
    egress: [{ host: git.company.example, methods: [GET], paths: ["/acme/app.git/**"] }]
    run: |
      echo "control=$(curl -s -o /tmp/control.out -w '%{http_code}' -m 20 'https://git.company.example/acme/app.git/info/refs?service=git-upload-pack&m=${mark}-control')"; head -c 300 /tmp/control.out | grep -a 'runner gateway' || true
      echo "plain=$(curl -s -o /dev/null -w '%{http_code}' -m 20 'http://git.company.example/acme/app.git/info/refs?m=${mark}')"
      echo "dot=$(curl -s -o /dev/null -w '%{http_code}' -m 20 -X DELETE 'https://git.company.example./acme/app.git/info/refs?m=${mark}')"
      echo "env=$(env | grep -c '[${token[0]}]${token.slice(1)}')"
`;
  const serve = await serveFolder(f, { 'door.yaml': file }, '127.0.0.1:0', { env: { GIT_TOKEN: token }, args: [...net.egressFlags, '--ca-file', ca.bundleFile] });
  try {
    const trig = await fetch(`${serve.base}/api/pipelines/door/runs`, { method: 'POST' });
    assert.equal(trig.status, 202, await trig.clone().text());
    const { runId } = (await trig.json()) as { runId: string };
    const done = await until(
      'the run to end',
      async () => {
        const r = (await (await fetch(`${serve.base}/api/runs/${runId}`)).json()) as { status: string };
        return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
      },
      240_000,
    );
    const answers = [JSON.stringify(done)];
    for (const p of [`/api/runs/${runId}`, `/api/runs/${runId}/log`, '/api/runs', '/api/pipelines', '/metrics']) answers.push(await (await fetch(`${serve.base}${p}`)).text());
    const log = answers[2]!;
    assert.equal(done.status, 'succeeded', `${JSON.stringify(done)}\n${log}\n${serve.out()}`);
    assert.match(log, /control=200/, log);
    assert.match(log, /plain=403/, log);
    assert.match(log, /dot=403/, log);
    assert.match(log, /env=0/, log);
    const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
    for (const a of [...answers, serve.out()]) assert.ok(!a.includes(token) && !a.includes(basic), 'no answer of the API, nor the server\'s output, holds the value');
    assert.deepEqual(server.arrived().filter((q) => q.url.includes(mark)).map((q) => q.url), [`/acme/app.git/info/refs?service=git-upload-pack&m=${mark}-control`]);
  } finally {
    serve.child.kill('SIGTERM');
    await serve.exited;
  }
});
