/**
 * `runner mcp` honours the run settings `runner exec` honours, given as
 * `runner exec` takes them (the environment, here): RUNNER_ISOLATION=gvisor
 * puts a step under runsc (its record says so, and the step sees gVisor's
 * kernel), RUNNER_EGRESS_NETWORK and HTTPS_PROXY send its gateway out through
 * the company's proxy with the proxy's credentials (a password holding an @),
 * RUNNER_CA_FILE makes it trust a root only the bundle holds, and
 * RUNNER_NPM_REGISTRY reaches its environment. Then the same through runner
 * serve's /mcp with RUNNER_EGRESS_PROXY, and the bundle taken as the host's
 * own (RUNNER_HOST_CA_BUNDLE, the default). All on networks of the test's own
 * (company-internet.ts): the office network leads out through the proxy only.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startCompanyInternet, type CompanyInternet } from '../fixtures/company-internet.js';
import { CLI, projectsForThisFile, serveFolder, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
let net: CompanyInternet;
let bundle: string;
/** the proxy's password holds an @: the gateway must send it whole, and nothing may print it */
const PASSWORD = 'Secr3tHead@Secr3tTail';
const proxyWith = (url: string) => url.replace('http://', `http://corp-user:${encodeURIComponent(PASSWORD).replace('%40', '@')}@`);
const AUTH = `Basic ${Buffer.from(`corp-user:${PASSWORD}`).toString('base64')}`;

before(() => {
  net = startCompanyInternet();
  bundle = path.join(net.ca.dir, 'bundle.pem');
  writeFileSync(bundle, readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8') + net.ca.caPem);
});
after(() => net?.close());

const PROBE = `version: 1
name: probe
project: { path: ../project, push: never }
inputs:
  door: { description: which door started it }
steps:
  - id: probe
    image: runner/toolchain:latest
    egress: [secure.example, plain.example]
    timeout: 2m
    run: |
      set +e
      say() { echo "$1=$2"; }
      say kernel "$(uname -r)"
      say dmesg "$(if dmesg 2>/dev/null | grep -q gVisor; then echo gvisor; else echo host; fi)"
      c=$(curl -s -m 20 https://secure.example/); say curl "$c exit $?"
      say plain "$(curl -s -m 20 http://plain.example/through-\${{ inputs.door }})"
      say npm "$npm_config_registry"
`;

/** the settings as a user's environment holds them (and nothing else this machine's environment may hold) */
function settingsEnv(proxy: Record<string, string>): Record<string, string> {
  const env = { ...(process.env as Record<string, string>) };
  for (const k of ['RUNNER_ENGINE', 'RUNNER_REGISTRY', 'RUNNER_EGRESS_PRIVATE', 'RUNNER_EGRESS_DNS', 'RUNNER_EGRESS_PROXY', 'HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy', 'RUNNER_PIP_INDEX']) delete env[k];
  return {
    ...env,
    RUNNER_ISOLATION: 'gvisor',
    RUNNER_EGRESS_NETWORK: net.office.network,
    RUNNER_CA_FILE: bundle,
    RUNNER_NPM_REGISTRY: 'http://npm.corp.example/',
    ...proxy,
  };
}

type Answer = { isError?: boolean; content: Array<{ text: string }> };
async function ok(c: Client, name: string, args: Record<string, unknown>, log: () => string): Promise<any> {
  const r = (await c.callTool({ name, arguments: args }, undefined, { timeout: 240_000 })) as Answer;
  assert.ok(!r.isError, `${name}: ${r.content[0]?.text}\n${log().slice(-3000)}`);
  return JSON.parse(r.content[0]!.text);
}

const said = (log: string) => Object.fromEntries(log.split('\n').filter((l) => /^[a-z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

/** Starts the probe through `c`, waits for it, and checks what the run and its step got from the settings. */
async function probeThrough(c: Client, f: Fixture, door: string, log: () => string): Promise<string> {
  const { runId } = await ok(c, 'start_run', { pipeline: 'probe', inputs: { door } }, log);
  const end = await ok(c, 'wait_for_run', { run_id: runId, timeout_seconds: 200 }, log);
  const stepLog = (() => {
    try {
      return readFileSync(path.join(f.home, 'runs', runId, 'steps', 'probe.log'), 'utf8');
    } catch {
      return '(no step log)';
    }
  })();
  assert.equal(end.status, 'succeeded', `${JSON.stringify(end)}\n${stepLog}\n${log().slice(-3000)}`);
  const rec = JSON.parse(readFileSync(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
  assert.equal(rec.steps[0].isolation, 'gvisor', 'the record: the step ran under gVisor');
  const s = said(stepLog);
  assert.equal(s.kernel, '4.4.0', `the step saw gVisor's kernel:\n${stepLog}`);
  assert.equal(s.dmesg, 'gvisor', stepLog);
  // the office network leads out through the proxy only, and secure.example's root is in the bundle only
  assert.equal(s.curl, 'secure hello exit 0', stepLog);
  assert.equal(s.plain, `plain hello /through-${door}`, stepLog);
  assert.equal(s.npm, 'http://npm.corp.example/', 'the mirror reached the step');
  const heard = net.logs('proxy.example');
  assert.ok(heard.split('\n').includes(`GET http://plain.example/through-${door} auth=${AUTH}`), `the proxy heard the gateway with its credentials:\n${heard}`);
  assert.ok(heard.split('\n').includes(`CONNECT secure.example:443 auth=${AUTH}`), heard);
  assert.doesNotMatch(log(), /Secr3t/, 'the password is printed nowhere');
  return stepLog;
}

test('runner mcp: RUNNER_ISOLATION, RUNNER_EGRESS_NETWORK, HTTPS_PROXY, RUNNER_CA_FILE, RUNNER_NPM_REGISTRY and RUNNER_WARM reach its runs (the step behind a warm gateway, given the proxy and the CA at its take)', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const pipes = path.join(f.root, 'pipelines');
  await mkdir(pipes);
  await writeFile(path.join(pipes, 'probe.yaml'), PROBE);
  let stderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--home', f.home, '--pipelines', pipes],
    env: { ...settingsEnv({ HTTPS_PROXY: proxyWith(net.proxyUrl) }), RUNNER_WARM: '1' },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (b) => (stderr += b));
  const c = new Client({ name: 'mcp-settings', version: '1' });
  await c.connect(transport);
  try {
    const stepLog = await probeThrough(c, f, 'stdio', () => stderr);
    assert.match(stepLog, /runner: gateway: a warm one, made ahead for no step in particular and given to this one alone/, stepLog);
  } finally {
    await c.close();
  }
});

test("runner serve's /mcp: the same, with RUNNER_EGRESS_PROXY, and the bundle the host's own (no RUNNER_CA_FILE: the default)", { timeout: 300_000 }, async () => {
  const f = await fixture();
  const token = 'mcp-settings-token-0123456789';
  const env = { ...settingsEnv({ RUNNER_EGRESS_PROXY: proxyWith(net.proxyUrl) }), RUNNER_CA_FILE: '', RUNNER_HOST_CA_BUNDLE: bundle, RUNNER_TOKEN: token };
  const s = await serveFolder(f, { 'probe.yaml': PROBE }, '127.0.0.1:0', { env });
  const c = new Client({ name: 'mcp-settings-http', version: '1' });
  try {
    await c.connect(new StreamableHTTPClientTransport(new URL(`${s.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    await probeThrough(c, f, 'serve', s.out);
  } finally {
    await c.close();
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
