/** Where gateways reach out, from flags else variables: errors say what to do, likely mistakes are warned of. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEgress } from '../../src/settings/egress.js';
import type { SettingsFlags } from '../../src/settings/flags.js';

interface Case {
  name: string;
  flags?: SettingsFlags;
  env?: NodeJS.ProcessEnv;
  /** fields of the result that must be so (proxy: host, port, noProxy, authorization) */
  want?: { network?: string; private?: string[]; dns?: string[] | undefined; proxy?: Record<string, unknown> | undefined };
  throws?: RegExp;
  warns?: RegExp;
}

const cases: Case[] = [
  { name: 'nothing set: bridge, no private range, the engine\'s DNS, no proxy', want: { network: 'bridge', private: [], dns: undefined, proxy: undefined } },
  { name: '--egress-network wins over RUNNER_EGRESS_NETWORK', flags: { 'egress-network': 'corp' }, env: { RUNNER_EGRESS_NETWORK: 'other' }, want: { network: 'corp' } },
  { name: 'RUNNER_EGRESS_NETWORK alone', env: { RUNNER_EGRESS_NETWORK: 'corp' }, want: { network: 'corp' } },
  { name: '--egress-private, a list', flags: { 'egress-private': '10.20.0.0/16,192.168.5.0/24' }, want: { private: ['10.20.0.0/16', '192.168.5.0/24'] } },
  { name: 'RUNNER_EGRESS_PRIVATE', env: { RUNNER_EGRESS_PRIVATE: '10.0.0.0/8' }, want: { private: ['10.0.0.0/8'] } },
  { name: 'a private range that is not one', flags: { 'egress-private': 'ten' }, throws: /\(--egress-private, or RUNNER_EGRESS_PRIVATE, takes CIDR\[,CIDR\]\)/ },
  { name: 'RUNNER_EGRESS_DNS, comma-separated', env: { RUNNER_EGRESS_DNS: '10.0.0.2, 10.0.0.3' }, want: { dns: ['10.0.0.2', '10.0.0.3'] } },
  { name: 'a name server that is not an address', env: { RUNNER_EGRESS_DNS: 'dns.corp' }, throws: /RUNNER_EGRESS_DNS: "dns.corp" is not an IP address/ },
  { name: '--egress-proxy', flags: { 'egress-proxy': 'http://proxy.corp.example:3128' }, want: { proxy: { host: 'proxy.corp.example', port: 3128 } } },
  { name: 'RUNNER_EGRESS_PROXY', env: { RUNNER_EGRESS_PROXY: 'http://a.example:1' }, want: { proxy: { host: 'a.example', port: 1 } } },
  { name: 'HTTPS_PROXY, with NO_PROXY read', env: { HTTPS_PROXY: 'http://b.example:3128', NO_PROXY: 'localhost,.corp.example' }, want: { proxy: { host: 'b.example', noProxy: ['localhost', '.corp.example'] } } },
  { name: 'https_proxy in lower case', env: { https_proxy: 'http://c.example:8080' }, want: { proxy: { host: 'c.example', port: 8080 } } },
  { name: 'RUNNER_EGRESS_PROXY wins over HTTPS_PROXY', env: { RUNNER_EGRESS_PROXY: 'http://a.example:1', HTTPS_PROXY: 'http://b.example:3128' }, want: { proxy: { host: 'a.example' } } },
  { name: '--egress-proxy none turns an inherited one off', flags: { 'egress-proxy': 'none' }, env: { HTTPS_PROXY: 'http://b.example:3128' }, want: { proxy: undefined } },
  { name: 'a proxy\'s user and password become its Proxy-Authorization', flags: { 'egress-proxy': 'http://u:p%40ss@proxy.corp:3128' }, want: { proxy: { authorization: `Basic ${Buffer.from('u:p@ss').toString('base64')}` } } },
  { name: 'an https:// proxy is refused', flags: { 'egress-proxy': 'https://p.example' }, throws: /--egress-proxy: https:\/\/ proxies are not supported/ },
  { name: 'a proxy on loopback, asked for: refused', flags: { 'egress-proxy': 'http://127.0.0.1:3128' }, throws: /loopback, which in a gateway's container is the container itself/ },
  { name: 'a proxy on loopback, inherited: left out, with a warning', env: { https_proxy: 'http://localhost:8080' }, want: { proxy: undefined }, warns: /the gateways reach out directly: HTTPS_PROXY http:\/\/localhost:8080 is on loopback/ },
  { name: 'an inherited proxy that is not a URL: left out, with a warning', env: { HTTPS_PROXY: 'http://[nope' }, want: { proxy: undefined }, warns: /the gateways reach out directly: HTTPS_PROXY .*is not a proxy URL/ },
  // a password is never shown, whatever it holds (the proxy's user is)
  { name: 'a loopback warning hides a password holding @', env: { HTTPS_PROXY: 'http://me:Secr3tHead@Secr3tTailB@127.0.0.1:3128' }, want: { proxy: undefined }, warns: /^(?!.*Secr3t).*HTTPS_PROXY http:\/\/me:\*\*\*@127\.0\.0\.1:3128 is on loopback/ },
  { name: 'a loopback warning hides a password holding /', env: { HTTPS_PROXY: 'http://me:Secr3t/Tail@127.0.0.1:3128' }, want: { proxy: undefined }, warns: /^(?!.*(Secr3t|Tail)).*HTTPS_PROXY its value \(not shown: it is not a URL/ },
  { name: 'a loopback refusal hides a password holding @', flags: { 'egress-proxy': 'http://me:Secr3tHead@Secr3tTailB@127.0.0.1:3128' }, throws: /^(?!.*Secr3t).*--egress-proxy http:\/\/me:\*\*\*@127\.0\.0\.1:3128 is on loopback/ },
  { name: 'a usage error hides a password holding /', env: { RUNNER_EGRESS_PROXY: 'http://me:Secr3t/Tail@127.0.0.1:3128' }, throws: /^(?!.*(Secr3t|Tail)).*RUNNER_EGRESS_PROXY: its value \(not shown: it is not a URL.*is not a proxy URL/ },
  { name: 'a usage error hides a password whose head reads as a port', env: { RUNNER_EGRESS_PROXY: 'http://me:1234/Secr3t@proxy.corp:3128' }, throws: /^(?!.*(1234|Secr3t)).*RUNNER_EGRESS_PROXY: its value \(not shown.*has a path/ },
  { name: 'a usage error hides a password holding : and percent-encodings', flags: { 'egress-proxy': 'https://me:pa:ss%2F@proxy.corp:3128' }, throws: /^(?!.*(pa:ss|%2F)).*https:\/\/ proxies are not supported/ },
  // attacks on the settings: a malformed value is refused clearly, an empty one does not drop another in silence
  { name: 'a password with a bare %: refused saying what to write, the password not shown', env: { RUNNER_EGRESS_PROXY: 'http://me:Secr3t%zz@proxy.corp:3128' }, throws: /^(?!.*Secr3t).*RUNNER_EGRESS_PROXY: http:\/\/me:\*\*\*@proxy\.corp:3128 has a % in its user or password that is not followed by two hex digits: write a % there as %25/ },
  { name: 'an inherited proxy with a bare %: left out with a warning, the password not shown', env: { HTTPS_PROXY: 'http://me:Secr3t%@proxy.corp:3128' }, want: { proxy: undefined }, warns: /^(?!.*Secr3t)the gateways reach out directly: HTTPS_PROXY http:\/\/me:\*\*\*@proxy\.corp:3128 has a %/ },
  { name: 'RUNNER_EGRESS_PROXY set empty is unset: HTTPS_PROXY still applies', env: { RUNNER_EGRESS_PROXY: '', HTTPS_PROXY: 'http://b.example:3128' }, want: { proxy: { host: 'b.example', port: 3128 } } },
  { name: 'a password in unicode, with a bidi override: hidden', flags: { 'egress-proxy': 'http://me:s\u00e9cr\u202eet@127.0.0.1:3128' }, throws: /^(?!.*(s%C3%A9cr|\u202e|et@)).*--egress-proxy http:\/\/me:\*\*\*@127\.0\.0\.1:3128 is on loopback/ },
];

for (const c of cases) {
  test(`egress: ${c.name}`, () => {
    const warned: string[] = [];
    const run = () => readEgress(c.flags ?? {}, c.env ?? {}, (m) => warned.push(m));
    if (c.throws) {
      assert.throws(run, c.throws);
      return;
    }
    const got = run();
    for (const [key, value] of Object.entries(c.want ?? {})) {
      const actual = got[key as keyof typeof got];
      if (key === 'proxy' && value !== undefined) {
        for (const [k, v] of Object.entries(value)) assert.deepEqual((actual as unknown as Record<string, unknown>)[k], v, `proxy.${k}`);
      } else assert.deepEqual(actual, value, key);
    }
    if (c.warns) {
      assert.equal(warned.length, 1, warned.join('\n'));
      assert.match(warned[0]!, c.warns);
    } else assert.deepEqual(warned, []);
  });
}
