/**
 * A step whose gateway holds credentials and egress rules, through the real
 * orchestrator on the fake engine (test/fixtures/fake-engine.ts), with a fake
 * gateway that speaks the inspecting gateway's protocol: its inspect config on
 * stdin, `ready` with its CA, `egress_refused` and `secret_refused`. The step
 * trusts the CA (bundle mounted and named), the credentials' values are in the
 * gateway's stdin alone (not in the step's spec, the run's record, events or
 * logs), and the refusals reach the step's log, the events and the record.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import tls from 'node:tls';
import type { GatewayConfig } from '../../src/gateway/config.js';
import { GATEWAY_IMAGE } from '../../src/gateway/host/image.js';
import { CA_PATH, SYSTEM_BUNDLE_PATH } from '../../src/plan/company-network.js';
import { defaultSettings } from '../../src/settings/run-settings.js';
import { assertLeftNothing, coreProjects, FakeEngine, pipeline, runOn } from '../fixtures/core-run.js';
import type { FakeProcess } from '../fixtures/fake-engine.js';

const project = coreProjects();

const GATEWAY_CA = '-----BEGIN CERTIFICATE-----\nMIIBgateway-ca-of-this-step\n-----END CERTIFICATE-----\n';
const COMPANY_CA = '-----BEGIN CERTIFICATE-----\nMIIBcompany-root\n-----END CERTIFICATE-----\n';
const TOKEN = 'ghp_never-in-the-step-1f2e3d';
const DB = 'db-password-in-the-step-9a8b';

const TOP = `secrets: [GITHUB_TOKEN, DB_PASSWORD]
credentials:
  github-api:
    hosts: [api.github.com]
    header: { Authorization: "Bearer \${GITHUB_TOKEN}" }`;
const STEP = `  - id: push
    run: push
    secrets: [DB_PASSWORD]
    credentials: [github-api]
    egress:
      - { host: api.github.com, methods: [GET], paths: ["/repos/acme/**"] }`;

/** The inspecting gateway as its protocol goes: ready with its CA (when it inspects), then what the step's requests met. */
function inspectingGateway(o: { caPem?: string } = {}) {
  return async (p: FakeProcess): Promise<number> => {
    const config = JSON.parse((p.spec.stdin as string | undefined) ?? '{}') as GatewayConfig;
    const say = (e: object) => p.stdout(`${JSON.stringify(e)}\n`);
    p.onTerm(() => {
      say({ event: 'refusals', hosts: {}, others: 0, budget: 0, paths: 0 });
      return 0;
    });
    const stepNet = [...p.container.addresses.entries()].find(([name]) => name !== p.spec.network)!;
    say({ event: 'ready', address: stepNet[1], ...(config.inspect?.hosts.length && o.caPem ? { caPem: o.caPem } : {}) });
    const rule = config.inspect?.hosts[0]?.rule ?? '?';
    for (let i = 0; i < 2; i++) say({ event: 'egress_refused', host: 'api.github.com', method: 'DELETE', path: '/repos/acme/app', rule, reason: 'method DELETE is not allowed' });
    say({ event: 'secret_refused', host: 'api.github.com', secret: 'DB_PASSWORD', where: 'body', form: 'base64' });
    return p.untilStopped();
  };
}

test('credentials and rules: the gateway is told them (values on its stdin only), the step trusts its CA, refusals are said and recorded', async () => {
  const f = await project();
  const file = await pipeline(f, STEP, TOP);
  const engine = await new FakeEngine().withGatewayImage();
  engine.image(GATEWAY_IMAGE, inspectingGateway({ caPem: GATEWAY_CA }));
  let bundle: string | undefined;
  let systemBundle: string | undefined;
  engine.step('push', async (p) => {
    bundle = await p.read(CA_PATH);
    systemBundle = await p.read(SYSTEM_BUNDLE_PATH);
    await p.write('done.txt', 'pushed\n');
  });
  const settings = { ...defaultSettings(), company: { ca: { pem: COMPANY_CA, certificates: 1, from: '/company.pem' } } };
  const { record } = await runOn(engine, f, file, { secrets: { GITHUB_TOKEN: TOKEN, DB_PASSWORD: DB }, settings });
  assert.equal(record.status, 'succeeded', JSON.stringify(record.steps[0]));

  const gw = engine.containers.find((c) => c.spec.image === GATEWAY_IMAGE)!;
  const step = engine.containers.find((c) => c.spec.image !== GATEWAY_IMAGE)!;
  const inspect = (JSON.parse(gw.spec.stdin as string) as GatewayConfig).inspect!;
  assert.deepEqual(inspect.hosts, [
    {
      host: 'api.github.com',
      methods: ['GET'],
      paths: ['/repos/acme/**'],
      rule: '{ host: api.github.com, methods: [GET], paths: ["/repos/acme/**"] }',
      credential: { name: 'github-api', headers: { Authorization: `Bearer ${TOKEN}` }, secrets: ['GITHUB_TOKEN'] },
    },
  ]);
  assert.deepEqual(inspect.secrets.map((s) => s.name).sort(), ['DB_PASSWORD', 'GITHUB_TOKEN']);
  assert.equal(inspect.maxBodyBytes, 10 * 1024 ** 2);

  // the step trusts the company's roots and its gateway's CA, wherever its tools look
  assert.equal(bundle, `${COMPANY_CA.trimEnd()}\n${GATEWAY_CA.trim()}\n`);
  assert.equal(systemBundle, bundle);
  for (const k of ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'GIT_SSL_CAINFO']) assert.equal(step.spec.env[k], CA_PATH, k);
  assert.deepEqual(step.spec.mounts.filter((m) => m.target === CA_PATH || m.target === SYSTEM_BUNDLE_PATH).map((m) => m.target), [CA_PATH, SYSTEM_BUNDLE_PATH]);
  assert.deepEqual(step.spec.files?.map((x) => x.target), [CA_PATH, SYSTEM_BUNDLE_PATH]);

  // the token is nowhere but the gateway's stdin: not the step's spec (env, secrets, labels, mounts, files)
  assert.ok(!JSON.stringify(step.spec).includes(TOKEN));
  assert.ok(!JSON.stringify({ ...gw.spec, stdin: undefined }).includes(TOKEN));
  assert.equal(step.spec.secretEnv?.DB_PASSWORD, DB);
  assert.equal(step.spec.secretEnv?.GITHUB_TOKEN, undefined);

  // the refusals: said once in the step's log, each an event, counted in the record; names, never values
  const runDir = path.join(f.home, 'runs', record.runId);
  const log = await readFile(path.join(runDir, 'steps', 'push.log'), 'utf8');
  const events = await readFile(path.join(runDir, 'events.jsonl'), 'utf8');
  const runJson = await readFile(path.join(runDir, 'run.json'), 'utf8');
  assert.equal(log.match(/runner gateway: refused DELETE api\.github\.com\/repos\/acme\/app \(method DELETE is not allowed; the rule is \{ host: api\.github\.com, methods: \[GET\], paths: \["\/repos\/acme\/\*\*"\] \}\)/g)?.length, 1, log);
  assert.match(log, /runner gateway: stopped a request to api\.github\.com that carried secret DB_PASSWORD \(base64, in its body\)/);
  assert.match(log, /runner gateway: the rule \{ host: api\.github\.com, methods: \[GET\], paths: \["\/repos\/acme\/\*\*"\] \} refused 2 requests in all/);
  const kinds = events.trim().split('\n').map((l) => JSON.parse(l) as { type?: string; event?: string; rule?: string; secret?: string });
  assert.equal(kinds.filter((e) => JSON.stringify(e).includes('"egress_refused"') && e.rule !== undefined).length, 2, events);
  assert.equal(kinds.filter((e) => JSON.stringify(e).includes('"secret_refused"') && e.secret === 'DB_PASSWORD').length, 1, events);
  assert.deepEqual(record.steps[0]!.egress, {
    refused: [],
    rules: [{ rule: '{ host: api.github.com, methods: [GET], paths: ["/repos/acme/**"] }', count: 2 }],
    secrets: [{ secret: 'DB_PASSWORD', count: 1 }],
  });
  for (const text of [log, events, runJson]) assert.ok(!text.includes(TOKEN) && !text.includes(DB));
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test("without a bundle (--ca-file none, or a machine that has none) the step trusts the public roots Node carries and its gateway's CA", async () => {
  const f = await project();
  const file = await pipeline(f, STEP, TOP);
  const engine = await new FakeEngine().withGatewayImage();
  engine.image(GATEWAY_IMAGE, inspectingGateway({ caPem: GATEWAY_CA }));
  let bundle: string | undefined;
  engine.step('push', async (p) => {
    bundle = await p.read(CA_PATH);
  });
  const { record } = await runOn(engine, f, file, { secrets: { GITHUB_TOKEN: TOKEN, DB_PASSWORD: DB } });
  assert.equal(record.status, 'succeeded');
  assert.equal(bundle, `${tls.rootCertificates.join('\n').trimEnd()}\n${GATEWAY_CA.trim()}\n`);
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test('a gateway that does not say its CA: the step is not started, since its credentials and rules cannot hold', async () => {
  const f = await project();
  const file = await pipeline(f, STEP, TOP);
  const engine = await new FakeEngine().withGatewayImage();
  engine.image(GATEWAY_IMAGE, inspectingGateway());
  engine.step('push', () => assert.fail('must not begin'));
  const { record } = await runOn(engine, f, file, { secrets: { GITHUB_TOKEN: TOKEN, DB_PASSWORD: DB } });
  const s = record.steps[0]!;
  assert.equal(record.status, 'failed');
  assert.equal(s.error, 'gateway_failed');
  assert.match(s.message ?? '', /the step's gateway did not say its CA: it does not inspect TLS, so this step's credentials and egress rules cannot hold/);
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test("a credential's secret that is not given refuses the run before it starts, naming it", async () => {
  const f = await project();
  const file = await pipeline(f, STEP, TOP);
  const engine = await new FakeEngine().withGatewayImage();
  await assert.rejects(runOn(engine, f, file, { secrets: { DB_PASSWORD: DB } }), /secret GITHUB_TOKEN named by the pipeline is not set: give it in the runner's environment/);
  assert.equal(engine.containers.length, 0);
});
