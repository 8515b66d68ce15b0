/**
 * What the gateway holds on an inspected host (issue 33), against a server of
 * the test's own that records every request that arrived (the HTTPS front of
 * test/fixtures/git-https.ts): method and path rules judged on the request as
 * the server would read it (`..`, `%2e%2e`, `//`, a lower-case method), each
 * refusal a 403 with one line and an `egress_refused` event naming the rule;
 * a step secret that tries to leave in any form, refused with a
 * `secret_refused` event that names it and never its value; a step that pins
 * another CA gets no connection and lets no credential out; and a file whose
 * credential names a host it may not reach, or a secret it does not have, is
 * refused at load with the fix.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startGitHttps, type ArrivedRequest, type GitHttps } from '../fixtures/git-https.js';
import { execPipeline, projectsForThisFile, runCli, writePipeline, type Fixture } from '../fixtures/project.js';
import { startTestCa, type TestCa } from '../fixtures/test-ca.js';
import { makeTestNetwork, type TestNetwork } from '../fixtures/test-network.js';

const fixture = projectsForThisFile();
let net: TestNetwork;
let ca: TestCa & { stop(): void };
let server: GitHttps;
before(() => {
  net = makeTestNetwork('cred-rules');
  ca = startTestCa(['git.company.example']);
  server = startGitHttps({ network: net.network, ca });
}, { timeout: 300_000 });
after(() => {
  server?.stop();
  net?.remove();
  ca?.stop();
});

const flags = () => [...net.egressFlags, '--ca-file', ca.bundleFile];
const said = (log: string) => Object.fromEntries(log.split('\n').filter((l) => /^[a-z0-9_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
const stepLog = (f: Fixture, runId: string, step: string) => readFileSync(path.join(f.home, 'runs', runId, 'steps', `${step}.log`), 'utf8');
const eventsText = (f: Fixture, runId: string) => readFileSync(path.join(f.home, 'runs', runId, 'events.jsonl'), 'utf8');
const events = (f: Fixture, runId: string) => eventsText(f, runId).trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
/** requests that arrived at the server with `mark` in their URL */
const arrivedWith = (mark: string): ArrivedRequest[] => server.arrived().filter((q) => q.url.includes(mark));

/** A shell function for the step: `probe NAME METHOD PATH [curl args]` prints `NAME=status|lines|first line of the body`. */
const PROBE = `probe() {
  name=$1; method=$2; p=$3; shift 3
  code=$(curl -s --path-as-is -o /tmp/body -w '%{http_code}' -m 20 -X "$method" "$@" "https://git.company.example$p")
  echo "$name=$code|$(wc -l < /tmp/body | tr -d ' ')|$(head -n 1 /tmp/body | cut -c1-300)"
}`;

test('method and path rules hold on the request as the server reads it: .., %2e%2e, //, a lower-case method; 403 with one line, egress_refused names the rule', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const mark = `rules-${randomBytes(4).toString('hex')}`;
  const file = await writePipeline(f, `version: 1
name: rules
project: { path: project, push: never }
steps:
  - id: probe
    image: runner/toolchain:latest
    timeout: 2m
    egress:
      - { host: git.company.example, methods: [GET], paths: ["/acme/app.git/**"] }
    run: |
      ${PROBE.split('\n').join('\n      ')}
      probe allowed GET '/acme/app.git/info/refs?m=${mark}-allowed'
      probe method POST '/acme/app.git/git-upload-pack?m=${mark}'
      probe lower_post post '/acme/app.git/info/refs?m=${mark}'
      probe lower_delete delete '/acme/app.git/info/refs?m=${mark}'
      probe path GET '/acme/other.git/info/refs?m=${mark}'
      probe dotdot GET '/acme/app.git/../other.git/info/refs?m=${mark}'
      probe encoded GET '/acme/app.git/%2e%2e/other.git/info/refs?m=${mark}'
      probe encoded_upper GET '/acme/app.git/%2E%2e/other.git/info/refs?m=${mark}'
      probe slashes GET '/acme/app.git//../other.git/info/refs?m=${mark}'
      probe root_slashes GET '//acme/other.git/info/refs?m=${mark}'
      probe query GET '/acme/other.git/info/refs?p=/acme/app.git/x&m=${mark}'
`);
  const r = await execPipeline(f, file, flags());
  const log = r.json ? stepLog(f, r.json.runId, 'probe') : r.stderr + r.stdout;
  assert.equal(r.code, 0, `${log}\n${r.stderr}`);
  const s = said(log);
  // the allowed request passed the gateway and reached the server (which wants a credential this step has none of)
  assert.match(s.allowed!, /^401\|/, log);
  assert.equal(arrivedWith(`${mark}-allowed`).length, 1);
  // a lower-case method is the upper-case one to a lenient server: refused (403 by the rule, or 400 where the gateway will not parse it)
  for (const name of ['lower_post', 'lower_delete']) assert.match(s[name]!, /^40[03]\|/, `${name}: ${s[name]}`);
  const refused = ['method', 'path', 'dotdot', 'encoded', 'encoded_upper', 'slashes', 'root_slashes', 'query'];
  for (const name of refused) {
    const [code, lines, body] = s[name]!.split('|');
    assert.equal(code, '403', `${name}: ${s[name]}`);
    assert.equal(lines, '1', `${name}: the refusal is one line: ${s[name]}`);
    assert.match(body!, /git\.company\.example/, `${name}: the line names the host`);
    assert.match(body!, /egress/, `${name}: and says how to allow more (the file's egress:): ${body}`);
  }
  assert.match(s.method!.split('|')[2]!, /GET/, 'a method refusal says which methods are allowed');
  assert.match(s.path!.split('|')[2]!, /\/acme\/app\.git\/\*\*/, 'a path refusal says which paths are allowed');
  // none of them arrived: only the allowed request did
  assert.deepEqual(arrivedWith(mark).map((q) => q.url), [`/acme/app.git/info/refs?m=${mark}-allowed`]);
  const refusals = events(f, r.json.runId).filter((e) => e.message === 'egress_refused');
  assert.ok(refusals.length >= refused.length, `one egress_refused event a refusal: ${JSON.stringify(refusals)}`);
  for (const e of refusals) {
    assert.equal(e.host, 'git.company.example');
    assert.match(String(e.rule), /git\.company\.example/, `the event names the rule as the file wrote it: ${JSON.stringify(e)}`);
    assert.match(String(e.rule), /\/acme\/app\.git\/\*\*/);
  }
});

test('a step secret does not leave: plain, URL-encoded, base64 or hex, in the URL, a header or the body, every attempt 403 and nothing arrives', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const mark = `leak-${randomBytes(4).toString('hex')}`;
  // characters URL-encoding changes, so the encoded form is not the plain one
  const password = `Db@pw/${randomBytes(10).toString('hex')}+z!`;
  const forms = [password, encodeURIComponent(password), Buffer.from(password).toString('base64'), Buffer.from(password).toString('hex')];
  const file = await writePipeline(f, `version: 1
name: leak
project: { path: project, push: never }
secrets: [DB_PASSWORD]
steps:
  - id: leak
    image: runner/toolchain:latest
    timeout: 2m
    secrets: [DB_PASSWORD]
    inspect: all
    egress: [git.company.example]
    run: |
      ${PROBE.split('\n').join('\n      ')}
      plain="$DB_PASSWORD"
      urlenc=$(python3 -c 'import os, urllib.parse; print(urllib.parse.quote(os.environ["DB_PASSWORD"], safe=""))')
      b64=$(printf %s "$DB_PASSWORD" | base64 -w0)
      hex=$(printf %s "$DB_PASSWORD" | od -An -tx1 | tr -d ' \\n')
      probe control GET '/exfil/nothing?m=${mark}-control'
      for form in plain urlenc b64 hex; do
        eval v=\\$$form
        probe "\${form}_url" GET "/exfil/$v?m=${mark}"
        probe "\${form}_query" GET "/exfil?v=$v&m=${mark}"
        probe "\${form}_header" GET "/exfil?m=${mark}" -H "X-Data: $v"
        probe "\${form}_body" POST "/exfil?m=${mark}" --data-binary "v=$v"
      done
`);
  const r = await execPipeline(f, file, flags(), { env: { DB_PASSWORD: password } });
  const log = r.json ? stepLog(f, r.json.runId, 'leak') : r.stderr + r.stdout;
  assert.equal(r.code, 0, `${log}\n${r.stderr}`);
  const s = said(log);
  assert.match(s.control!, /^401\|/, `the host is reachable, without the secret: ${log}`);
  const attempts = ['plain', 'urlenc', 'b64', 'hex'].flatMap((form) => ['url', 'query', 'header', 'body'].map((where) => `${form}_${where}`));
  for (const a of attempts) assert.match(s[a] ?? '', /^403\|1\|/, `${a}: ${s[a]}`);
  assert.deepEqual(arrivedWith(mark).map((q) => q.url), [`/exfil/nothing?m=${mark}-control`], 'nothing but the control arrived');
  const arrivedText = JSON.stringify(server.arrived());
  for (const v of forms) assert.ok(!arrivedText.includes(v) && !arrivedText.includes(Buffer.from(v).toString('base64')), 'no form of the secret reached the server');
  const refusals = events(f, r.json.runId).filter((e) => e.message === 'secret_refused');
  assert.ok(refusals.length >= attempts.length, `one secret_refused event an attempt: ${refusals.length}`);
  for (const e of refusals) {
    assert.equal(e.secret, 'DB_PASSWORD');
    assert.equal(e.host, 'git.company.example');
  }
  assert.deepEqual(refusals.map((e) => e.where).filter((w, i, a) => a.indexOf(w) === i).sort(), ['body', 'header', 'url']);
  const records = eventsText(f, r.json.runId) + log + readFileSync(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8');
  for (const v of forms) assert.ok(!records.includes(v), `the run's records hold no form of the secret (${forms.indexOf(v)})`);
});

test('a step that pins another CA to an inspected host gets no connection, and the credential goes nowhere', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const mark = `pin-${randomBytes(4).toString('hex')}`;
  const file = await writePipeline(f, `version: 1
name: pin
project: { path: project, push: never }
secrets: [GIT_TOKEN]
credentials:
  company-git:
    hosts: [git.company.example]
    basic: { username: x-access-token, password: "\${GIT_TOKEN}" }
steps:
  - id: pin
    image: runner/toolchain:latest
    timeout: 2m
    credentials: [company-git]
    egress: [{ host: git.company.example, paths: ["/acme/app.git/**"] }]
    run: |
      cat > /tmp/servers-root.pem <<'PEM'
      ${ca.caPem.trim().split('\n').join('\n      ')}
      PEM
      # the real server's own root, pinned: the gateway's certificate is not from it
      # a step's script stops at its first failure: each pinned attempt's exit is caught to be said
      code=$(curl -s -o /dev/null -w '%{http_code}' -m 20 --cacert /tmp/servers-root.pem 'https://git.company.example/acme/app.git/info/refs?m=${mark}-curl') && rc=0 || rc=$?; echo "curl=$code exit $rc"
      # (GIT_SSL_CAINFO, which the step is given, would win over git's own setting: pinning means dropping it)
      # (and Debian's git, on GnuTLS, reads /etc/ssl/certs as well unless given another directory)
      mkdir -p /tmp/no-certs
      env -u GIT_SSL_CAINFO GIT_TERMINAL_PROMPT=0 git -c http.sslCAInfo=/tmp/servers-root.pem -c http.sslCAPath=/tmp/no-certs ls-remote 'https://git.company.example/acme/app.git' >/dev/null 2>/tmp/git.err && rc=0 || rc=$?; echo "git=exit $rc $(grep -c -i 'certificate' /tmp/git.err)"; sed 's/^/git.err: /' /tmp/git.err
      # Node's https does not read HTTPS_PROXY: the tunnel is opened by hand, then TLS pinned to the server's root
      node -e 'const p = new URL(process.env.HTTPS_PROXY || process.env.https_proxy); require("http").request({ host: p.hostname, port: p.port, method: "CONNECT", path: "git.company.example:443" }).on("connect", (res, sock) => { const t = require("tls").connect({ socket: sock, servername: "git.company.example", ca: require("fs").readFileSync("/tmp/servers-root.pem") }, () => { t.end("GET /acme/app.git/info/refs?m=${mark}-node HTTP/1.1\\r\\nHost: git.company.example\\r\\n\\r\\n"); console.log("node=connected"); }); t.on("error", (e) => console.log("node=error " + e.code)); }).on("error", (e) => console.log("node=error " + e.code)).end()'
      # trusting what the step is given, the same request gets the credential from the gateway
      echo "trusted=$(curl -s -o /dev/null -w '%{http_code}' -m 20 'https://git.company.example/acme/app.git/info/refs?service=git-upload-pack&m=${mark}-trusted')"
`);
  const token = server.token;
  const r = await execPipeline(f, file, flags(), { env: { GIT_TOKEN: token } });
  const log = r.json ? stepLog(f, r.json.runId, 'pin') : r.stderr + r.stdout;
  assert.equal(r.code, 0, `${log}\n${r.stderr}`);
  const s = said(log);
  assert.match(s.curl!, /^000 exit 60$/, `curl refuses the gateway's certificate: ${log}`);
  assert.match(s.git!, /^exit [1-9]\d* [1-9]/, `git refuses it, for its certificate: ${log}`);
  assert.match(s.node!, /^error (SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|UNABLE_TO_VERIFY_LEAF_SIGNATURE|DEPTH_ZERO_SELF_SIGNED_CERT)$/, log);
  assert.equal(s.trusted, '200', 'the control: the inspected host with the credential added');
  assert.deepEqual(arrivedWith(`${mark}-curl`), [], 'nothing of the pinned requests arrived');
  assert.deepEqual(arrivedWith(`${mark}-node`), []);
  assert.ok(arrivedWith(`${mark}-trusted`).every((q) => q.authorized) && arrivedWith(`${mark}-trusted`).length === 1);
  assert.ok(!readFileSync(path.join(f.home, 'runs', r.json.runId, 'events.jsonl'), 'utf8').includes(token));
});

test('a credential for a host the step may not reach, or made of a secret the file does not have, is refused at load with the fix', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const outside = await writePipeline(f, `version: 1
name: outside
project: { path: project, push: never }
secrets: [GIT_TOKEN]
credentials:
  company-git:
    hosts: [git.company.example]
    basic: { username: x-access-token, password: "\${GIT_TOKEN}" }
steps:
  - id: s
    image: runner/toolchain:latest
    credentials: [company-git]
    egress: [npm.company.example]
    run: "true"
`, 'outside.yaml');
  const a = await runCli(['validate', outside]);
  assert.notEqual(a.code, 0, a.stdout);
  const sa = a.stderr + a.stdout;
  assert.match(sa, /company-git/, sa);
  assert.match(sa, /git\.company\.example/, sa);
  assert.match(sa, /egress/, `the fix: allow the host in egress: ${sa}`);

  const unnamed = await writePipeline(f, `version: 1
name: unnamed
project: { path: project, push: never }
secrets: [GIT_TOKEN]
credentials:
  company-npm:
    hosts: [npm.company.example]
    header: { Authorization: "Bearer \${NPM_TOKEN}" }
steps:
  - id: s
    image: runner/toolchain:latest
    credentials: [company-npm]
    egress: [npm.company.example]
    run: "true"
`, 'unnamed.yaml');
  const b = await runCli(['validate', unnamed]);
  assert.notEqual(b.code, 0, b.stdout);
  const sb = b.stderr + b.stdout;
  assert.match(sb, /NPM_TOKEN/, sb);
  assert.match(sb, /secrets/, `the fix: name it in secrets: ${sb}`);

  // listed, but not given to the runner: refused before any container starts, with how to give it
  const listed = await writePipeline(f, `version: 1
name: listed
project: { path: project, push: never }
secrets: [NPM_TOKEN]
credentials:
  company-npm:
    hosts: [npm.company.example]
    header: { Authorization: "Bearer \${NPM_TOKEN}" }
steps:
  - id: s
    image: runner/toolchain:latest
    credentials: [company-npm]
    egress: [npm.company.example]
    run: "true"
`, 'listed.yaml');
  const env = { ...process.env };
  delete env.NPM_TOKEN;
  const c = await execPipeline(f, listed, [], { env: { ...env, NPM_TOKEN: '' } });
  assert.notEqual(c.code, 0);
  assert.match(c.stderr, /NPM_TOKEN[^\n]*not set[^\n]*export NPM_TOKEN=/, c.stderr);
});
