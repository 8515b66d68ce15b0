/**
 * The gateway's probe of an upstream's certificate, against a TLS server of
 * the test's own on loopback: an untrusted chain is said once per host and
 * port, with whether the host's bundle would trust it; a trusted one, and a
 * server that never answers, say nothing.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import type { UntrustedEvent } from '../../src/gateway/config.js';
import { TrustProbe } from '../../src/gateway/trust-probe.js';
import { makeTestCa, type TestCa } from '../fixtures/test-ca.js';

let proxyCa: TestCa;
let otherCa: TestCa;
let server: tls.Server;
let port: number;
let connections = 0;
let silent: net.Server;
let silentPort: number;

before(async () => {
  proxyCa = makeTestCa(['registry.example']);
  otherCa = makeTestCa(['other.example']);
  server = tls.createServer({ key: proxyCa.key, cert: proxyCa.cert }, (s) => s.end());
  server.on('connection', () => connections++);
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as net.AddressInfo).port;
  // takes the connection, never answers the ClientHello
  silent = net.createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  silentPort = (silent.address() as net.AddressInfo).port;
});
after(() => {
  server.close();
  silent.close();
  proxyCa.close();
  otherCa.close();
});

const open = (p: number) => () =>
  new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect(p, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });

/** The events a probe says within `ms`. */
async function probed(o: { roots: readonly string[]; hostCa?: string }, asks: Array<[string, number]>, ms = 1500): Promise<UntrustedEvent[]> {
  const said: UntrustedEvent[] = [];
  const probe = new TrustProbe({ ...o, emit: (e) => said.push(e), timeoutMs: 1000 });
  for (const [host, p] of asks) probe.check(host, p, open(p));
  await new Promise((r) => setTimeout(r, ms));
  return said;
}

test("a chain the step does not trust and the host's bundle does: said once, with hostTrusts", async () => {
  const before = connections;
  const said = await probed({ roots: tls.rootCertificates, hostCa: `${otherCa.caPem}${proxyCa.caPem}` }, [
    ['registry.example', port],
    ['Registry.Example.', port],
  ]);
  assert.equal(connections - before, 1, 'one probe per host and port');
  assert.equal(said.length, 1);
  assert.deepEqual(said[0], { event: 'untrusted', host: 'registry.example', port, reason: said[0]!.reason, issuer: 'CN=runner test company CA', hostTrusts: true });
  assert.match(said[0]!.reason, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/);
});

test("a chain neither trusts: said, hostTrusts false; with no host bundle, the same", async () => {
  const [withOther] = await probed({ roots: tls.rootCertificates, hostCa: otherCa.caPem }, [['registry.example', port]]);
  assert.equal(withOther?.hostTrusts, false);
  const [none] = await probed({ roots: tls.rootCertificates }, [['registry.example', port]]);
  assert.equal(none?.hostTrusts, false);
});

test('a chain the step trusts says nothing', async () => {
  assert.deepEqual(await probed({ roots: [...tls.rootCertificates, proxyCa.caPem] }, [['registry.example', port]]), []);
});

test('a certificate for another name: said with its reason, which no bundle fixes (hostTrusts false)', async () => {
  const [e] = await probed({ roots: [...tls.rootCertificates, proxyCa.caPem], hostCa: proxyCa.caPem }, [['wrong.example', port]]);
  assert.equal(e?.reason, 'ERR_TLS_CERT_ALTNAME_INVALID');
  assert.equal(e?.hostTrusts, false);
});

test('a server that never answers, or a connection refused, says nothing (the step hears of it itself)', async () => {
  const closed = await new Promise<number>((r) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => r(p));
    });
  });
  assert.deepEqual(await probed({ roots: tls.rootCertificates, hostCa: proxyCa.caPem }, [['registry.example', silentPort], ['registry.example', closed]], 1800), []);
});
