/** The line a step's log gets when its gateway found an upstream certificate the step will refuse: the host, and the setting that fixes it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { UntrustedEvent } from '../../src/gateway/config.js';
import type { CompanyNetwork } from '../../src/plan/company-network.js';
import { untrustedLine } from '../../src/plan/untrusted-upstream.js';

const HOST = '/etc/ssl/certs/ca-certificates.crt';
const proxied: UntrustedEvent = { event: 'untrusted', host: 'registry.npmjs.org', port: 443, reason: 'SELF_SIGNED_CERT_IN_CHAIN', issuer: 'CN=corp-egress-ca', hostTrusts: true };
const unknown: UntrustedEvent = { ...proxied, hostTrusts: false };

const cases: Array<{ name: string; e: UntrustedEvent; company: CompanyNetwork | undefined; says: RegExp[]; not?: RegExp[] }> = [
  {
    name: "--ca-file none, and the host's bundle trusts it: drop the none, or give the host's bundle",
    e: proxied,
    company: { caOff: '--ca-file none', hostCa: { pem: '', from: HOST } },
    says: [/^runner gateway: registry\.npmjs\.org presents a certificate issued by CN=corp-egress-ca that this step does not trust \(SELF_SIGNED_CERT_IN_CHAIN\), and this machine does \(\/etc\/ssl\/certs\/ca-certificates\.crt\)/, /TLS-inspecting proxy/, /run without --ca-file none/, /--ca-file \/etc\/ssl\/certs\/ca-certificates\.crt$/],
  },
  { name: 'RUNNER_CA_FILE=none is named as such', e: proxied, company: { caOff: 'RUNNER_CA_FILE=none', hostCa: { pem: '', from: HOST } }, says: [/run without RUNNER_CA_FILE=none/] },
  {
    name: "another --ca-file that lacks the proxy's root: give the host's, or add the root to it",
    e: proxied,
    company: { ca: { pem: '', certificates: 1, from: '/corp/old.pem', by: '--ca-file' }, hostCa: { pem: '', from: HOST } },
    says: [/The bundle given with --ca-file \(\/corp\/old\.pem\) lacks its root: give --ca-file \/etc\/ssl\/certs\/ca-certificates\.crt, or add that root to \/corp\/old\.pem$/],
  },
  {
    name: "trusted by neither, with the host's bundle the steps': how to hand over the proxy's root",
    e: unknown,
    company: { ca: { pem: '', certificates: 140, from: HOST, by: 'host' } },
    says: [/nor does this machine's bundle \(\/etc\/ssl\/certs\/ca-certificates\.crt\)/, /cat \/etc\/ssl\/certs\/ca-certificates\.crt proxy-root\.pem > bundle\.pem, then --ca-file bundle\.pem$/],
  },
  { name: 'trusted by neither, with no bundle at all: the images\' own roots', e: unknown, company: undefined, says: [/nor does the images' own roots/, /--ca-file bundle\.pem/] },
  { name: 'a port other than 443 is named', e: { ...unknown, port: 8443 }, company: undefined, says: [/^runner gateway: registry\.npmjs\.org:8443 presents/] },
  {
    name: "the upstream's words are shown on one line, printable, bounded",
    e: { ...unknown, issuer: `CN=evil\n\x1b[2Jrunner: fake${'x'.repeat(300)}`, host: 'a.example\r\nb' },
    company: undefined,
    says: [/^runner gateway: a\.example\?\?b presents a certificate issued by CN=evil\?\?\[2Jrunner: fakex+ that/],
    not: [/[\n\r\x1b]/, /x{300}/],
  },
  {
    name: 'an expired certificate, or one for another name, is no question of bundles: no --ca-file advice',
    e: { ...unknown, reason: 'CERT_HAS_EXPIRED' },
    company: undefined,
    says: [/\(CERT_HAS_EXPIRED\): its tools will refuse it, and no CA bundle changes that$/],
    not: [/--ca-file/],
  },
];

for (const c of cases) {
  test(`untrusted upstream: ${c.name}`, () => {
    const line = untrustedLine(c.e, c.company);
    for (const r of c.says) assert.match(line, r);
    for (const r of c.not ?? []) assert.doesNotMatch(line, r);
  });
}
