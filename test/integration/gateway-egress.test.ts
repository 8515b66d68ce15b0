/**
 * A hostile step behind its gateway, on a fake internet: it reaches the host
 * its egress: allows (plain HTTP), is refused another (logged, counted,
 * shown), resolves no name, cannot connect to an address directly, and gains
 * nothing by dropping the proxy variables. A tunnel carries TLS to its own
 * host only (no other site fronted through it, no other port), and no
 * allowed name leads to this machine or an address the runner was not told
 * to allow.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startFakeInternet, type FakeInternet } from '../fixtures/fake-internet.js';
import { bridgeGateway } from '../fixtures/model-server.js';
import { execPipeline, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
let net: FakeInternet;
/** this machine's own address on its way out (not a bridge's, not loopback) */
const machine = Object.entries(os.networkInterfaces()).filter(([n]) => !/^(lo|docker|br-|veth)/.test(n)).flatMap(([, l]) => l ?? []).find((a) => a.family === 'IPv4' && !a.internal)?.address;
before(() => {
  net = startFakeInternet(['allowed.example', 'denied.example'], (hostAddress) => ({
    'host-gw.example': hostAddress,
    'docker0.example': bridgeGateway(),
    ...(machine ? { 'machine.example': machine } : {}),
    'lan.example': '10.99.0.5',
  }));
});
after(() => net?.close());
/** how the tests' runner is told of the fake internet: its network, its (private) range, its name server */
const fakeInternetArgs = () => ['--egress-network', net.network, '--egress-private', net.subnet];
const fakeInternetEnv = () => ({ RUNNER_EGRESS_DNS: net.dns! });

const probe = (ip: string) => `
      set +e
      say() { echo "$1=$2" | tee -a probe.txt; }
      say http "$(curl -s -m 5 http://allowed.example/)"
      say tunnel "$(curl -s -m 5 --proxytunnel http://allowed.example/ ; echo " exit $?")"
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
  const r = await execPipeline(f, file, fakeInternetArgs(), { env: fakeInternetEnv() });
  assert.equal(r.code, 0, r.stderr);
  const runDir = path.join(f.home, 'runs', r.json.runId);
  const log = readFileSync(path.join(runDir, 'steps', 'probe.log'), 'utf8');
  const said = Object.fromEntries(log.split('\n').filter((l) => /^[a-z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  assert.equal(said.http, 'this is allowed.example', log);
  assert.match(said.tunnel!, / exit [1-9]\d*$/, 'a tunnel to port 80 is refused: tunnels carry TLS, to 443');
  assert.doesNotMatch(said.tunnel!, /this is/);
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
  assert.deepEqual(refusedEvents.map((e) => [e.step, e.host]).sort(), [['probe', 'allowed.example'], ['probe', 'denied.example'], ['probe', net.ips['allowed.example']]].sort());
  assert.match(log, /runner gateway: refused allowed\.example \(port 80 is not allowed for a tunnel to it \(allowed: 443; name another as allowed\.example:80 in egress:\)\)/);
  const shown = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.match(shown.stdout, /egress refused: denied\.example ×2/);

  // nothing of the step's gateway is left
  assert.equal(execFileSync('docker', ['ps', '-aq', '--filter', `label=dev.runner.run-id=${r.json.runId}`], { encoding: 'utf8' }).trim(), '');
  assert.equal(execFileSync('docker', ['network', 'ls', '-q', '--filter', `label=dev.runner.run-id=${r.json.runId}`], { encoding: 'utf8' }).trim(), '');
});

test('an allowed host that does not answer is said in the step\'s log at once, once, with what to do (tools retry it in silence)', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    `version: 1
name: unreachable
project: { path: project }
steps:
  - id: probe
    image: runner/toolchain:latest
    egress: [allowed.example:9]
    timeout: 2m
    run: |
      for i in 1 2 3; do curl -s -m 5 -o /dev/null -w '%{http_code}\\n' http://allowed.example:9/; done
`,
  );
  const r = await execPipeline(f, file, fakeInternetArgs(), { env: fakeInternetEnv() });
  assert.equal(r.code, 0, r.stderr);
  const runDir = path.join(f.home, 'runs', r.json.runId);
  const log = readFileSync(path.join(runDir, 'steps', 'probe.log'), 'utf8');
  assert.match(log, /^502$/m, log);
  const said = log.split('\n').filter((l) => l.includes('is allowed but did not answer'));
  assert.equal(said.length, 1, `said once for three tries:\n${log}`);
  assert.match(said[0]!, /runner gateway: allowed\.example:9 is allowed but did not answer \(ECONNREFUSED: no connection\); tools like npm and pip retry such a host in silence.*--egress-proxy/);
  const events = readFileSync(path.join(runDir, 'events.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(events.filter((e) => e.message === 'egress_unreachable').map((e) => [e.host, e.port, e.reason]), [['allowed.example', 9, 'ECONNREFUSED']]);
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
  const r = await execPipeline(f, file, fakeInternetArgs(), { env: fakeInternetEnv() });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.steps.probe.status, 'completed');
});

// A step's raw tunnels through its gateway, in Python: the CONNECT's answer, then what the far end said after the bytes sent.
/** `cases`: Python tuples (key, host, port, what to do in the tunnel); the script indented for the YAML block it goes in. */
const tunnels = (cases: string) => `
import socket, ssl, sys
def tunnel(host, port):
    s = socket.create_connection(("runner-gateway", 3128), timeout=5)
    s.sendall(("CONNECT %s:%d HTTP/1.1\\r\\nHost: %s:%d\\r\\n\\r\\n" % (host, port, host, port)).encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        b = s.recv(1)
        if not b: break
        head += b
    return s, head.split(b"\\r\\n")[0].decode()
def after(s, data):
    try:
        s.sendall(data); s.settimeout(5); got = s.recv(100)
        return "got:" + got.decode("latin1").strip() if got else "closed"
    except Exception as e: return "error:" + type(e).__name__
def tls(s, name):
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    try:
        ctx.wrap_socket(s, server_hostname=name); return "handshake"
    except Exception as e: return "error:" + type(e).__name__
def say(k, v): print("%s=%s" % (k, v), flush=True)
for key, host, port, then in [${cases}]:
    s, status = tunnel(host, port)
    say(key, status + ("" if then is None or " 200 " not in status else " then " + then(s)))
`.replace(/\n/g, '\n      ');
const FRONTING_CASES = `
    ("port80", "allowed.example", 80, None),
    ("plain443", "allowed.example", 443, lambda s: after(s, b"POST / HTTP/1.1\\r\\nHost: cdn-evil.example\\r\\ncontent-length: 2\\r\\n\\r\\nhi")),
    ("evil_sni", "allowed.example", 443, lambda s: tls(s, "cdn-evil.example")),
    ("good_sni", "allowed.example", 443, lambda s: tls(s, "allowed.example")),
    ("port8443", "allowed.example", 8443, lambda s: tls(s, "allowed.example")),
    ("port9000", "allowed.example", 9000, None),
    ("host_tunnel", "host-gw.example", int(sys.argv[1]), lambda s: tls(s, "host-gw.example")),
`;

test('a tunnel carries TLS to the host it was opened for: no other site fronted through it, no other port', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, `version: 1
name: fronting
project: { path: project }
steps:
  - id: front
    image: runner/toolchain:latest
    egress: [allowed.example, "allowed.example:8443"]
    timeout: 2m
    run: |
      cat > /tmp/t.py <<'EOF'${tunnels(FRONTING_CASES)}EOF
      python3 /tmp/t.py 1 | tee probe.txt
`);
  const r = await execPipeline(f, file, fakeInternetArgs(), { env: fakeInternetEnv() });
  assert.equal(r.code, 0, r.stderr);
  const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'front.log'), 'utf8');
  const said = Object.fromEntries(log.split('\n').filter((l) => /^[a-z0-9_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  assert.match(said.port80!, /^HTTP\/1\.1 403/, log);
  assert.match(said.port9000!, /^HTTP\/1\.1 403/, log);
  assert.match(said.plain443!, /^HTTP\/1\.1 200 Connection Established then (closed|error:)/, 'plain HTTP in a tunnel gets no answer');
  assert.match(said.evil_sni!, /then error:/, log);
  assert.match(said.good_sni!, /then error:SSL/, 'the far end got the hello (and answered it badly: it is no TLS server)');
  assert.match(said.port8443!, /then error:SSL/, 'a port the file names is open to tunnels');
  assert.match(log, /runner gateway: refused allowed\.example \(not TLS: a tunnel carries TLS only\)/);
  assert.match(log, /runner gateway: refused allowed\.example \(a ClientHello for cdn-evil\.example, in a tunnel opened for allowed\.example\)/);
  assert.match(log, /runner gateway: refused allowed\.example 4 times in all/);
  assert.match(log, /refused allowed\.example \(port 80 is not allowed for a tunnel/);
  // what the front saw: the two hellos for its own name, and nothing for another site, in the clear or in a hello
  const seen = net.logs('allowed.example').split('\n').filter((l) => l.startsWith('TLS ') && !l.includes(' bytes=0 '));
  // (each twice: the step's hello, and the gateway's own probe of the host's certificate, trust-probe.ts, which names the same host)
  assert.deepEqual([...new Set(seen.map((l) => l.replace(/ bytes=\d+/, '')))].sort(), ['TLS port=443 evil=False allowed=True plain=False', 'TLS port=8443 evil=False allowed=True plain=False'], net.logs('allowed.example'));
  assert.doesNotMatch(net.logs('allowed.example'), /host=cdn-evil/);
});

test("no allowed name leads to this machine (any of its addresses) or a private range it was not told of", { timeout: 180_000 }, async () => {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.end('the host answered\n');
  });
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
  const port = (server.address() as AddressInfo).port;
  try {
    const f = await fixture();
    const names = ['host-gw.example', 'docker0.example', ...(machine ? ['machine.example'] : [])];
    const file = await writePipeline(f, `version: 1
name: this-machine
project: { path: project }
steps:
  - id: probe
    image: runner/toolchain:latest
    egress: [allowed.example, lan.example, ${names.map((n) => `"${n}:${port}"`).join(', ')}]
    timeout: 2m
    run: |
      set +e
      for n in ${names.join(' ')}; do echo "$n=$(curl -s -m 5 -w ' %{http_code}' http://$n:${port}/)"; done
      echo "lan=$(curl -s -m 5 -w ' %{http_code}' http://lan.example/)"
      echo "ok=$(curl -s -m 5 http://allowed.example/)"
      cat > /tmp/t.py <<'EOF'${tunnels('("host_tunnel", "host-gw.example", int(sys.argv[1]), lambda s: tls(s, "host-gw.example"))')}EOF
      python3 /tmp/t.py ${port}
`);
    const r = await execPipeline(f, file, fakeInternetArgs(), { env: fakeInternetEnv() });
    assert.equal(r.code, 0, r.stderr);
    const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'probe.log'), 'utf8');
    for (const n of names) {
      assert.match(log, new RegExp(`^${n}=runner gateway: ${n.replace(/\./g, '\\.')} refused \\(leads where a step may not go \\([\\d.]+: an address of this machine\\)\\)\\n 403$`, 'm'), log);
    }
    assert.match(log, /^lan=runner gateway: lan\.example refused \(leads where a step may not go \(10\.99\.0\.5: a private or special-purpose address, not the internet \(allow its range with --egress-private on runner exec or serve\)\)\)\n 403$/m);
    assert.match(log, /^ok=this is allowed\.example$/m, 'an allowed private range (the fake internet) is reached');
    assert.match(log, /^host_tunnel=HTTP\/1\.1 403/m, log);
    assert.equal(hits, 0, "this machine's service was never reached");
  } finally {
    server.close();
  }
});

// A step behind a gateway is held until its gateway listens: in the /bin/sh prelude when its image has one, else
// its container is started only then. A step with no shell that calls at once must reach the allowed host all the same.
test('an image without /bin/sh behind a gateway: started once its gateway listens, its first request at once reaches the allowed host', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const image = `runner-test-egress-no-shell:${process.pid}`;
  // this machine's node and the libraries it links, and nothing else
  execFileSync('bash', ['-c', 'set -e; node=$(readlink -f "$(command -v node)"); files=$(ldd "$node" | grep -o "/[^ ]*" | sort -u); tar -chP "$node" $files --transform "s|^$node|usr/local/bin/node|" --transform "s|^/||" | docker import - "$1" >/dev/null', 'import', image]);
  try {
    assert.notEqual(spawnSync('docker', ['run', '--rm', '--entrypoint', '/bin/sh', image, '-c', 'true'], { stdio: 'ignore' }).status, 0, 'the image has no /bin/sh');
    const call = `require('http').get({ host: 'runner-gateway', port: 3128, path: 'http://allowed.example/', headers: { host: 'allowed.example' } }, (r) => { let b = ''; r.on('data', (d) => (b += d)); r.on('end', () => console.log('got=' + b)); }).on('error', (e) => { console.log('error=' + e.message); process.exit(1); })`;
    const file = await writePipeline(
      f,
      `version: 1
name: egress-no-shell
project: { path: project }
steps:
  - id: bare
    image: ${image}
    egress: [allowed.example]
    timeout: 1m
    command: [/usr/local/bin/node, -e, ${JSON.stringify(call)}]
`,
    );
    const r = await execPipeline(f, file, fakeInternetArgs(), { env: fakeInternetEnv() });
    assert.equal(r.code, 0, r.stderr);
    const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'bare.log'), 'utf8');
    assert.match(log, /^got=this is allowed\.example$/m, log);
  } finally {
    spawnSync('docker', ['image', 'rm', '-f', image], { stdio: 'ignore' });
  }
});
