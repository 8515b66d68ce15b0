/**
 * A hostile step behind its gateway, on a fake internet: it reaches the host
 * its egress: allows (plain HTTP and through a CONNECT tunnel), is refused
 * another (logged, counted, shown), resolves no name, cannot connect to an
 * address directly, and gains nothing by dropping the proxy variables.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startFakeInternet, type FakeInternet } from '../fixtures/fake-internet.js';
import { execPipeline, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
let net: FakeInternet;
before(() => {
  net = startFakeInternet();
});
after(() => net?.close());

const probe = (ip: string) => `
      set +e
      say() { echo "$1=$2" | tee -a probe.txt; }
      say http "$(curl -s -m 5 http://allowed.example/)"
      say tunnel "$(curl -s -m 5 --proxytunnel http://allowed.example/)"
      say denied "$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://denied.example/)"
      say denied_tunnel "$(curl -s -m 5 --proxytunnel -o /dev/null -w '%{http_code}' http://denied.example/ 2>/dev/null; echo " exit $?")"
      say by_ip "$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://${ip}/)"
      getent hosts allowed.example >/dev/null; say resolve_allowed $?
      getent hosts example.com >/dev/null; say resolve_other $?
      say direct "$(curl -s -m 3 --noproxy '*' http://${ip}/ ; echo " exit $?")"
      say unset "$(env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY curl -s -m 3 http://allowed.example/ ; echo " exit $?")"
      say proxy_env "$http_proxy $HTTPS_PROXY $no_proxy"
`;

test('a step with egress: [allowed.example] reaches it, and nothing else', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    `version: 1
name: egress
project: { path: project }
steps:
  - id: probe
    image: runner/toolchain:latest
    egress: [allowed.example]
    timeout: 2m
    run: |${probe(net.ips['allowed.example']!)}
`,
  );
  const r = await execPipeline(f, file, ['--egress-network', net.network]);
  assert.equal(r.code, 0, r.stderr);
  const runDir = path.join(f.home, 'runs', r.json.runId);
  const log = readFileSync(path.join(runDir, 'steps', 'probe.log'), 'utf8');
  const said = Object.fromEntries(log.split('\n').filter((l) => /^[a-z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  assert.equal(said.http, 'this is allowed.example', log);
  assert.equal(said.tunnel, 'this is allowed.example', log);
  assert.equal(said.denied, '403', log);
  assert.match(said.denied_tunnel!, / exit [1-9]\d*$/, log);
  assert.equal(said.by_ip, '403', log);
  assert.notEqual(said.resolve_allowed, '0', 'no name resolves in the step, an allowed one neither (the proxy resolves it)');
  assert.notEqual(said.resolve_other, '0', log);
  assert.match(said.direct!, / exit [1-9]\d*$/, 'a direct connection to an address fails');
  assert.doesNotMatch(said.direct!, /this is/);
  assert.match(said.unset!, / exit [1-9]\d*$/, 'without the proxy variables there is no way out');
  assert.doesNotMatch(said.unset!, /this is/);
  assert.equal(said.proxy_env, 'http://runner-gateway:3128 http://runner-gateway:3128 runner-gateway,localhost,127.0.0.1');

  // each refusal in the step's log, its events, its record and runs show
  assert.match(log, /runner gateway: refused denied\.example \(not in the step's egress list\)/);
  assert.match(log, new RegExp(`runner gateway: refused ${net.ips['allowed.example']!.replace(/\./g, '\\.')} \\(an IP address`));
  const step = JSON.parse(readFileSync(path.join(runDir, 'run.json'), 'utf8')).steps[0];
  const denied = step.egress.refused.find((x: { host: string }) => x.host === 'denied.example');
  assert.equal(denied.count, 2, JSON.stringify(step.egress));
  const events = readFileSync(path.join(runDir, 'events.jsonl'), 'utf8');
  const refusedEvents = events.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.message === 'egress_refused');
  assert.deepEqual(refusedEvents.map((e) => [e.step, e.host]).sort(), [['probe', 'denied.example'], ['probe', net.ips['allowed.example']]].sort());
  const shown = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.match(shown.stdout, /egress refused: denied\.example ×2/);

  // nothing of the step's gateway is left
  assert.equal(execFileSync('docker', ['ps', '-aq', '--filter', `label=dev.runner.run-id=${r.json.runId}`], { encoding: 'utf8' }).trim(), '');
  assert.equal(execFileSync('docker', ['network', 'ls', '-q', '--filter', `label=dev.runner.run-id=${r.json.runId}`], { encoding: 'utf8' }).trim(), '');
});

test('a plain step with no egress: keeps network none and gets no gateway', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, `version: 1
name: plain
project: { path: project }
defaults: { egress: [] }
steps:
  - id: probe
    image: runner/toolchain:latest
    run: 'test -z "$http_proxy" && ! curl -s -m 3 http://allowed.example/'
`);
  const r = await execPipeline(f, file, ['--egress-network', net.network]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.steps.probe.status, 'completed');
});
