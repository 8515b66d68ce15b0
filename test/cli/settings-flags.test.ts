/**
 * exec, serve and mcp take the same run-settings flags and check them the same
 * way, before anything starts (no engine needed): each door is given every
 * flag, then each flag wrong.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SETTINGS_FLAGS } from '../../src/settings/flags.js';
import { runCli } from '../fixtures/project.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-settings-flags-'));
const pipelines = path.join(dir, 'pipelines');
const file = path.join(dir, 'p.yaml');
const ca = path.join(dir, 'ca.pem');
const secrets = path.join(dir, 'secrets.env');
const home = path.join(dir, 'home');
const registryAuth = path.join(dir, 'docker-config.json');
writeFileSync(file, 'version: 1\nname: p\nproject:\n  path: .\nsteps:\n  - id: a\n    image: runner/base:latest\n    run: "true"\n');
writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'.repeat(12));
writeFileSync(secrets, 'A=1\n', { mode: 0o600 });
writeFileSync(registryAuth, JSON.stringify({ auths: { 'registry.corp.example': { auth: Buffer.from('me:pw').toString('base64') } } }));
await import('node:fs/promises').then((fs) => fs.mkdir(pipelines));

/** the settings this machine's environment might hold are cleared: only the flags speak */
const CLEAN: NodeJS.ProcessEnv = Object.fromEntries(
  ['RUNNER_ENGINE', 'RUNNER_REGISTRY', 'RUNNER_ISOLATION', 'RUNNER_EGRESS_NETWORK', 'RUNNER_EGRESS_PRIVATE', 'RUNNER_EGRESS_DNS', 'RUNNER_EGRESS_PROXY', 'HTTPS_PROXY', 'https_proxy', 'RUNNER_CA_FILE', 'RUNNER_NPM_REGISTRY', 'RUNNER_PIP_INDEX', 'RUNNER_REGISTRY_AUTH'].map((k) => [k, '']),
);

const DOORS: Record<string, string[]> = {
  exec: ['exec', file, '--home', home],
  serve: ['serve', '--pipelines', pipelines, '--home', home],
  mcp: ['mcp', '--pipelines', pipelines, '--home', home],
};

/** per flag: a value that is taken, and one that is refused with what is said */
const FLAGS: Record<keyof typeof SETTINGS_FLAGS, { good: string; bad?: [string, RegExp] }> = {
  engine: { good: 'local', bad: ['k8s', /--engine takes local, swarm or podman, got "k8s"/] },
  registry: { good: 'reg.lab:5000' },
  isolation: { good: 'runc', bad: ['kata', /--isolation takes runc or gvisor, got "kata"/] },
  'egress-network': { good: 'corp' },
  'egress-private': { good: '10.20.0.0/16', bad: ['ten', /--egress-private, or RUNNER_EGRESS_PRIVATE, takes CIDR/] },
  'egress-proxy': { good: 'http://proxy.corp.example:3128', bad: ['http://127.0.0.1:3128', /--egress-proxy http:\/\/127\.0\.0\.1:3128 is on loopback/] },
  'ca-file': { good: ca, bad: [path.join(dir, 'nope.pem'), /--ca-file: .*nope\.pem does not exist/] },
  'npm-registry': { good: 'https://npm.corp.example/', bad: ['npm.corp', /--npm-registry \(or RUNNER_NPM_REGISTRY\): "npm.corp" is not a URL/] },
  'pip-index': { good: 'https://pypi.corp.example/simple/', bad: ['pypi.corp', /--pip-index \(or RUNNER_PIP_INDEX\): "pypi.corp" is not a URL/] },
  'secrets-file': { good: secrets },
  'registry-auth': { good: registryAuth, bad: [path.join(dir, 'nope.json'), /--registry-auth: .*nope\.json does not exist: give a docker config\.json/] },
};

for (const [door, args] of Object.entries(DOORS)) {
  test(`${door} takes every run-settings flag (the first refusal is the wrong --isolation's, given last)`, async () => {
    const all = Object.entries(FLAGS).flatMap(([flag, v]) => (flag === 'isolation' ? [] : [`--${flag}`, v.good]));
    const r = await runCli([...args, ...all, '--isolation', 'kata'], { env: CLEAN });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--isolation takes runc or gvisor, got "kata"/);
  });

  test(`${door} refuses each wrong run setting with what to do, before anything starts`, async () => {
    for (const [flag, v] of Object.entries(FLAGS)) {
      if (!v.bad) continue;
      const r = await runCli([...args, `--${flag}`, v.bad[0]], { env: CLEAN });
      assert.equal(r.code, 2, `${door} --${flag}: ${r.stderr}`);
      assert.match(r.stderr, v.bad[1], `${door} --${flag}`);
    }
  });
}
