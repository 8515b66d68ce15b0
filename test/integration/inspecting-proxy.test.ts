/**
 * Behind a TLS-inspecting proxy of the test's own (test/fixtures/inspecting-proxy.ts),
 * whose root is in the host's bundle (RUNNER_HOST_CA_BUNDLE stands for
 * /etc/ssl/certs/ca-certificates.crt): by default a step's curl and npm
 * trust what the host trusts and work through it; with `--ca-file none`,
 * the step's log names the host and `--ca-file` within seconds of the
 * step's first request, while npm is still retrying; and a proxy the host
 * does not trust either is said as such.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { HOST_BUNDLE } from '../fixtures/test-ca.js';
import { SITE, startInspectingProxy, TINY, type InspectingProxy } from '../fixtures/inspecting-proxy.js';
import { execPipeline, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
let proxy: InspectingProxy;
before(() => {
  proxy = startInspectingProxy();
});
after(() => proxy?.close());

const stepLog = (home: string, runId: string, step: string) => readFileSync(path.join(home, 'runs', runId, 'steps', `${step}.log`), 'utf8');

/** curl at once; npm in the background (it retries a certificate it refuses, in silence); a mark ten seconds on. */
const pipeline = `version: 1
name: inspected
project: { path: project }
steps:
  - id: fetch
    image: runner/toolchain:latest
    egress: [${SITE}]
    timeout: 3m
    run: |
      if out=$(curl -sS -m 20 https://${SITE}/hello 2>&1); then code=0; else code=$?; fi
      echo "curl=$(echo $out | head -c 100) exit $code"
      (if npm view ${TINY.name} version --registry https://${SITE}/ --fetch-retries=1 --fetch-retry-mintimeout=15000 --fetch-retry-maxtimeout=15000 > /tmp/npm.out 2>&1; then code=0; else code=$?; fi; echo "npm_exit=$code"; sed 's/^/npm: /' /tmp/npm.out) &
      sleep 10
      echo "mark=ten seconds on"
      wait
`;

const hint = new RegExp(`^runner gateway: ${SITE.replace('.', '\\.')} presents a certificate .*--ca-file.*$`, 'm');

test("by default a step trusts the host's bundle: curl and npm work through a TLS-inspecting proxy whose root the host has", { timeout: 240_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline);
  const r = await execPipeline(f, file, proxy.flags, { env: { RUNNER_HOST_CA_BUNDLE: proxy.hostBundle } });
  const log = r.json ? stepLog(f.home, r.json.runId, 'fetch') : r.stderr;
  assert.equal(r.code, 0, log);
  assert.match(log, /^curl=secure hello exit 0$/m, `${log}\nproxy:\n${proxy.logs('proxy')}\nsite:\n${proxy.logs('site')}`);
  assert.match(log, new RegExp(`^npm: ${TINY.version.replace(/\./g, '\\.')}$`, 'm'), log);
  assert.match(log, /^npm_exit=0$/m, log);
  assert.doesNotMatch(log, /does not trust/, log);
  assert.doesNotMatch(log, /--ca-file/, log);
  // through the proxy, which terminated the step's TLS with its own root
  assert.match(proxy.logs('proxy'), new RegExp(`INSPECTED ${SITE}:443`));
});

test('with --ca-file none the step\'s log names the host and --ca-file within seconds, while npm still retries', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline);
  const r = await execPipeline(f, file, [...proxy.flags, '--ca-file', 'none'], { env: { RUNNER_HOST_CA_BUNDLE: proxy.hostBundle } });
  const log = r.json ? stepLog(f.home, r.json.runId, 'fetch') : r.stderr;
  assert.equal(r.code, 0, log);
  assert.match(log, /^curl=curl: \(60\) .* exit 60$/m, 'curl refuses the proxy\'s certificate');
  const said = hint.exec(log);
  assert.ok(said, log);
  assert.match(said[0], /issued by CN=runner test company CA that this step does not trust \(SELF_SIGNED_CERT_IN_CHAIN\), and this machine does/);
  assert.ok(said[0].includes(`run without --ca-file none (steps then trust this machine's bundle), or with --ca-file ${proxy.hostBundle}`), said[0]);
  // said before the mark ten seconds after the step's first request, and before npm gave up
  assert.ok(said.index < log.indexOf('mark=ten seconds on'), log);
  assert.ok(said.index < log.indexOf('npm_exit='), log);
  assert.match(log, /^npm_exit=[1-9]/m, 'npm fails all the same');
  assert.equal(log.match(new RegExp(hint.source, 'gm'))?.length, 1, 'said once for the host');
  // and again at the step's end, beside npm's own failure
  assert.match(log, new RegExp(`^runner gateway: this step does not trust the certificate of ${SITE.replace('.', '\\.')} \\(said above.*--ca-file`, 'm'), log);
  assert.ok(log.lastIndexOf('this step does not trust the certificate of') > log.indexOf('npm_exit='), log);
});

test("a proxy the host's bundle does not trust either is said too, with the host and how to hand its root over", { timeout: 240_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline.replace(/\n {6}\(npm[^\n]*/, '').replace('sleep 10', 'sleep 5').replace('ten seconds on', 'five seconds on'));
  const r = await execPipeline(f, file, proxy.flags, { env: { RUNNER_HOST_CA_BUNDLE: HOST_BUNDLE } });
  const log = r.json ? stepLog(f.home, r.json.runId, 'fetch') : r.stderr;
  assert.equal(r.code, 0, log);
  const said = hint.exec(log);
  assert.ok(said, log);
  assert.ok(said[0].includes(`nor does this machine's bundle (${HOST_BUNDLE}): its tools will refuse it. Behind a TLS-inspecting proxy, give the proxy's root with this machine's: cat ${HOST_BUNDLE} proxy-root.pem > bundle.pem, then --ca-file bundle.pem`), said[0]);
  assert.ok(said.index < log.indexOf('mark=five seconds on'), log);
});
