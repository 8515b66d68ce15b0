/**
 * A company's network, on networks of the test's own: a site whose
 * certificate comes from a root no image knows (as behind a TLS-inspecting
 * proxy) is trusted by curl, Node, Python and git in a step only when the
 * runner is given a bundle that holds it (--ca-file); the gateways reach
 * the sites through the company's proxy (--egress-proxy), which hears of
 * allowed names only; and pip installs a wheel from a mirror
 * (--pip-index), whose host every gateway allows.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startCompanyInternet, type CompanyInternet } from '../fixtures/company-internet.js';
import { execPipeline, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
let net: CompanyInternet;
/** the host's own bundle with the test's root: what a user hands over (docs/company-networks.md) */
let bundle: string;
before(() => {
  net = startCompanyInternet();
  bundle = path.join(net.ca.dir, 'bundle.pem');
  writeFileSync(bundle, readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8') + net.ca.caPem);
});
after(() => net?.close());

const said = (log: string) => Object.fromEntries(log.split('\n').filter((l) => /^[a-z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
const stepLog = (home: string, runId: string, step: string) => readFileSync(path.join(home, 'runs', runId, 'steps', `${step}.log`), 'utf8');

const TRUST_PROBE = `
      set +e
      say() { echo "$1=$2"; }
      c=$(curl -s -m 10 https://secure.example/); say curl "$c exit $?"
      c=$(env -u CURL_CA_BUNDLE -u SSL_CERT_FILE curl -s -m 10 https://secure.example/); say curl_default "$c exit $?"
      say python "$(python3 -c 'import urllib.request as u; print(u.urlopen("https://secure.example/", timeout=10).read().decode().strip())' 2>&1 | tail -n 1)"
      cat > /tmp/probe.cjs <<'JS'
      const http = require('http'), tls = require('tls');
      const p = new URL(process.env.HTTPS_PROXY);
      http.request({ host: p.hostname, port: p.port, method: 'CONNECT', path: 'secure.example:443' }).on('connect', (r, s) => {
        const t = tls.connect({ socket: s, servername: 'secure.example' }, () => t.write('GET / HTTP/1.0\\r\\nhost: secure.example\\r\\n\\r\\n'));
        let b = '';
        t.on('data', (d) => (b += d));
        t.on('end', () => console.log(b.split('\\r\\n\\r\\n')[1].trim()));
        t.on('error', (e) => console.log('error ' + e.code));
      }).end();
      JS
      say node "$(node /tmp/probe.cjs 2>&1)"
      say git "$(git ls-remote https://secure.example/repo.git 2>&1 | head -n 1)"
      say plain "$(curl -s -m 10 http://plain.example/through)"
      say denied "$(curl -s -m 10 -o /dev/null -w '%{http_code}' https://denied.example/; echo " exit $?")"
`;

const trustPipeline = `version: 1
name: trust
project: { path: project }
steps:
  - id: probe
    image: runner/toolchain:latest
    egress: [secure.example, plain.example]
    timeout: 2m
    run: |${TRUST_PROBE}
`;

test('a step trusts a root only the --ca-file holds: curl, Node, Python, git, and a tool that reads no variable', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, trustPipeline);
  const direct = ['--egress-network', net.internet.network, '--egress-private', net.internet.subnet];

  // by default the steps trust the host's own bundle, which does not hold the test's root
  const before = await execPipeline(f, file, direct);
  assert.equal(before.code, 0, before.stderr);
  const no = said(stepLog(f.home, before.json.runId, 'probe'));
  assert.match(no.curl!, / exit 60$/, 'curl: the certificate is not trusted');
  assert.match(no.python!, /CERTIFICATE_VERIFY_FAILED/);
  assert.match(no.node!, /^error (SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|UNABLE_TO_VERIFY_LEAF_SIGNATURE)$/);
  assert.match(no.git!, /SSL certificate problem|certificate verification failed/);

  const withCa = await execPipeline(f, file, [...direct, '--ca-file', bundle]);
  assert.equal(withCa.code, 0, withCa.stderr);
  const yes = said(stepLog(f.home, withCa.json.runId, 'probe'));
  assert.equal(yes.curl, 'secure hello exit 0');
  assert.equal(yes.curl_default, 'secure hello exit 0', "the bundle is also where the image's tools look by default");
  assert.equal(yes.python, 'secure hello');
  assert.equal(yes.node, 'secure hello');
  assert.doesNotMatch(yes.git!, /SSL|certificate/i, yes.git);
  assert.match(yes.git!, /not valid|not found|repository/i, 'git reached the site (which is no git server)');
  // the copies steps mount (the host's bundle the first run's, by default, and the --ca-file's): in the home, named by their content
  const copies = readdirSync(path.join(f.home, 'network'));
  assert.ok(copies.every((c) => /^ca-[0-9a-f]{16}\.pem$/.test(c)), copies.join(', '));
  assert.equal(copies.filter((c) => readFileSync(path.join(f.home, 'network', c), 'utf8') === readFileSync(bundle, 'utf8')).length, 1, copies.join(', '));
});

test("the gateways reach out through the company's proxy, which hears of allowed names only", { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, trustPipeline);
  // the office network leads nowhere but the proxy: no site's name resolves there
  const r = await execPipeline(f, file, ['--egress-network', net.office.network, '--egress-proxy', net.proxyUrl, '--ca-file', bundle]);
  assert.equal(r.code, 0, r.stderr);
  const log = stepLog(f.home, r.json.runId, 'probe');
  const s = said(log);
  assert.equal(s.curl, 'secure hello exit 0', log);
  assert.equal(s.node, 'secure hello');
  assert.equal(s.plain, 'plain hello /through');
  assert.match(s.denied!, /^(000|403) exit/, 'a name not allowed is refused by the gateway');
  const heard = net.logs('proxy.example');
  assert.match(heard, /CONNECT secure\.example:443/);
  assert.match(heard, /GET http:\/\/plain\.example\/through/);
  assert.doesNotMatch(heard, /denied\.example/);
});

test('pip installs from a mirror given by --pip-index, whose host the gateway allows by itself', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    `version: 1
name: mirror
project: { path: project }
steps:
  - id: install
    image: runner/toolchain:latest
    egress: [pypi.org, files.pythonhosted.org]
    timeout: 2m
    run: |
      python3 -m venv /tmp/venv
      /tmp/venv/bin/pip install --disable-pip-version-check --no-cache-dir runner-tiny
      /tmp/venv/bin/python -c 'import runner_tiny; print("tiny=" + runner_tiny.GREETING)'
      echo "index=$PIP_INDEX_URL trusted=$PIP_TRUSTED_HOST"
`,
  );
  const r = await execPipeline(f, file, ['--egress-network', net.internet.network, '--egress-private', net.internet.subnet, '--pip-index', 'http://pypi.example/simple/']);
  const log = r.json ? stepLog(f.home, r.json.runId, 'install') : r.stderr;
  assert.equal(r.code, 0, log);
  assert.match(log, /^tiny=tiny from the mirror$/m);
  assert.match(log, /^index=http:\/\/pypi\.example\/simple\/ trusted=pypi\.example$/m);
  assert.match(net.logs('pypi.example'), /GET \/simple\/runner-tiny\/ HTTP/);
});

test("the real npm registry: a step with egress: [registry.npmjs.org] and the host's own bundle sees what the host sees", { timeout: 180_000 }, async () => {
  // what this machine sees with its own bundle (through whatever proxy it is behind), or that it sees nothing
  let hostSees: string | undefined;
  try {
    hostSees = (JSON.parse(execFileSync('curl', ['-sf', '-m', '30', '--cacert', '/etc/ssl/certs/ca-certificates.crt', 'https://registry.npmjs.org/is-number/latest'], { encoding: 'utf8' })) as { version: string }).version;
  } catch {
    hostSees = undefined;
  }
  const f = await fixture();
  const file = await writePipeline(
    f,
    `version: 1
name: registry
project: { path: project }
steps:
  - id: view
    image: runner/toolchain:latest
    egress: [registry.npmjs.org]
    timeout: 2m
    run: npm view is-number version --fetch-retries=0 --fetch-timeout=30000
`,
  );
  const r = await execPipeline(f, file, ['--ca-file', '/etc/ssl/certs/ca-certificates.crt']);
  const log = r.json ? stepLog(f.home, r.json.runId, 'view') : r.stderr;
  if (hostSees) {
    assert.equal(r.code, 0, log);
    assert.match(log, new RegExp(`^${hostSees.replace(/\./g, '\\.')}$`, 'm'));
  } else {
    // a machine that cannot reach the registry: the step cannot either, and says so
    assert.notEqual(r.code, 0, log);
    assert.match(log, /npm error/);
  }
});
