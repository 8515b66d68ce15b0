/** What a step's gateway is told to inspect, built from the plan and the run's secrets; and that no value is in the plan or the step's env. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { credentialValueProblems, inspectionFor, inspectsTls, MAX_INSPECTED_BODY } from '../../src/plan/gateway-inspection.js';
import { renderStep } from '../../src/plan/render.js';
import { planSteps, secretsNeeded } from '../../src/plan/step-plan.js';
import { ISSUE_EXAMPLE } from '../fixtures/credentials-pipeline.js';

const SECRETS = { ANTHROPIC_API_KEY: 'sk-ant-model-key-0001', GITHUB_TOKEN: 'ghp_github-token-0002', NPM_TOKEN: 'npm-token-0003', DB_PASSWORD: 'db-password-0004' };
const IDENTITY = { runId: 'r', pipeline: 'creds', branch: 'run/r', baseSha: 'abc', attempt: 1, taskRun: 1, taskId: '' };

test('the plan holds the credentials as the file wrote them (templates, never values), the rules in the file\'s words, the hosts allowed', () => {
  const [plan] = planSteps(parsePipeline(ISSUE_EXAMPLE, 'x.yaml'));
  const g = plan!.gateway!;
  assert.deepEqual(g.egress, ['registry.npmjs.org', 'npm.company.example', 'api.github.com', 'github.com']);
  assert.deepEqual(
    g.credentials?.map((c) => [c.name, c.secrets]),
    [
      ['github-api', ['GITHUB_TOKEN']],
      ['github-git', ['GITHUB_TOKEN']],
      ['company-npm', ['NPM_TOKEN']],
    ],
  );
  assert.equal(g.rules?.[0]?.rule, '{ host: api.github.com, methods: [GET, POST], paths: ["/repos/acme/app/**"] }');
  assert.equal(g.rules?.[1]?.rule, '{ host: github.com, paths: ["/acme/app.git/**"] }');
  assert.ok(inspectsTls(g));
  // the step's own secret is its; the credentials' are the gateway's
  assert.deepEqual(plan!.secrets, ['DB_PASSWORD']);
  assert.deepEqual(secretsNeeded([plan!]), ['ANTHROPIC_API_KEY', 'DB_PASSWORD', 'GITHUB_TOKEN', 'NPM_TOKEN']);
});

test('the inspect config: one host per rule and credential host, headers filled in, basic made Authorization, every secret, 10 MiB', () => {
  const [plan] = planSteps(parsePipeline(ISSUE_EXAMPLE, 'x.yaml'));
  const inspect = inspectionFor(plan!.gateway!, SECRETS)!;
  assert.equal(inspect.maxBodyBytes, MAX_INSPECTED_BODY);
  assert.equal(MAX_INSPECTED_BODY, 10 * 1024 * 1024);
  assert.equal(inspect.all, undefined);
  const byHost = Object.fromEntries(inspect.hosts.map((h) => [h.host, h]));
  assert.deepEqual(Object.keys(byHost).sort(), ['api.github.com', 'github.com', 'npm.company.example']);
  assert.deepEqual(byHost['api.github.com'], {
    host: 'api.github.com',
    methods: ['GET', 'POST'],
    paths: ['/repos/acme/app/**'],
    rule: '{ host: api.github.com, methods: [GET, POST], paths: ["/repos/acme/app/**"] }',
    credential: { name: 'github-api', headers: { Authorization: 'Bearer ghp_github-token-0002' }, secrets: ['GITHUB_TOKEN'] },
  });
  assert.deepEqual(byHost['github.com']!.credential, {
    name: 'github-git',
    headers: { Authorization: `Basic ${Buffer.from('x-access-token:ghp_github-token-0002').toString('base64')}` },
    secrets: ['GITHUB_TOKEN'],
  });
  assert.deepEqual(byHost['github.com']!.paths, ['/acme/app.git/**']);
  assert.deepEqual(byHost['npm.company.example'], { host: 'npm.company.example', credential: { name: 'company-npm', headers: { Authorization: 'Bearer npm-token-0003' }, secrets: ['NPM_TOKEN'] } });
  // registry.npmjs.org has neither: its tunnel is today's
  assert.equal(byHost['registry.npmjs.org'], undefined);
  assert.deepEqual(
    inspect.secrets.map((s) => s.name).sort(),
    ['ANTHROPIC_API_KEY', 'DB_PASSWORD', 'GITHUB_TOKEN', 'NPM_TOKEN'],
  );
});

test('no credential value is in the plan, nor in the step\'s rendered env, command or secrets', () => {
  const plans = planSteps(parsePipeline(ISSUE_EXAMPLE, 'x.yaml'));
  const text = JSON.stringify(plans);
  const rendered = JSON.stringify(renderStep(plans[0]!, new Map(), IDENTITY, SECRETS));
  for (const value of [SECRETS.GITHUB_TOKEN, SECRETS.NPM_TOKEN, SECRETS.ANTHROPIC_API_KEY, Buffer.from(`x-access-token:${SECRETS.GITHUB_TOKEN}`).toString('base64')]) {
    assert.ok(!text.includes(value), 'plan');
    assert.ok(!rendered.includes(value), 'rendered step');
  }
  // the step secret does reach the step (apart from its env: its process, not its container's config)
  assert.equal(renderStep(plans[0]!, new Map(), IDENTITY, SECRETS).secretEnv.DB_PASSWORD, SECRETS.DB_PASSWORD);
});

test('inspect: all inspects every host; a stream: entry is kept for a host inspected anyway, and asks for nothing alone', () => {
  const text = ISSUE_EXAMPLE.replace('      - registry.npmjs.org\n', '      - { host: registry.npmjs.org, stream: true }\n');
  const [plain] = planSteps(parsePipeline(text, 'x.yaml'));
  assert.equal(inspectionFor(plain!.gateway!, SECRETS)!.hosts.some((h) => h.host === 'registry.npmjs.org'), false);
  const [all] = planSteps(parsePipeline(text.replace('    use: claude-code\n', '    use: claude-code\n    inspect: all\n'), 'x.yaml'));
  const inspect = inspectionFor(all!.gateway!, SECRETS)!;
  assert.equal(inspect.all, true);
  assert.deepEqual(
    inspect.hosts.find((h) => h.host === 'registry.npmjs.org'),
    { host: 'registry.npmjs.org', stream: true, rule: '{ host: registry.npmjs.org, stream: true }' },
  );
});

test('a `*.` credential covers a rule on a host under it; a host with a port is inspected by its name', () => {
  const text = `version: 1
name: x
secrets: [T]
credentials:
  gh: { hosts: ["*.github.com"], header: { X-Token: "\${T}" } }
defaults: { image: base }
steps:
  - id: a
    run: "true"
    credentials: [gh]
    egress: ["*.github.com", { host: "api.github.com:8443", methods: [GET] }]
`;
  const [plan] = planSteps(parsePipeline(text, 'x.yaml'));
  assert.deepEqual(plan!.gateway!.egress, ['*.github.com', 'api.github.com:8443']);
  const inspect = inspectionFor(plan!.gateway!, { T: 'tok' })!;
  const api = inspect.hosts.find((h) => h.host === 'api.github.com');
  assert.deepEqual(api?.credential, { name: 'gh', headers: { 'X-Token': 'tok' }, secrets: ['T'] });
  assert.deepEqual(api?.methods, ['GET']);
  assert.ok(inspect.hosts.some((h) => h.host === '*.github.com' && h.credential?.name === 'gh'));
});

test('a plain gated step with no rule, no credential and no secret has nothing to inspect; with secrets, they are watched', () => {
  const text = `version: 1
name: x
defaults: { image: base }
steps:
  - id: a
    run: "true"
    egress: [example.com]
`;
  const [plan] = planSteps(parsePipeline(text, 'x.yaml'));
  assert.equal(inspectsTls(plan!.gateway), false);
  assert.equal(inspectionFor(plan!.gateway!, {}), undefined);
  assert.deepEqual(inspectionFor(plan!.gateway!, { S: 'v' }), { hosts: [], secrets: [{ name: 'S', value: 'v' }], maxBodyBytes: MAX_INSPECTED_BODY });
});

test('a credential value a header cannot carry is said by the secret\'s name before the run starts, never by its value', () => {
  const [plan] = planSteps(parsePipeline(ISSUE_EXAMPLE, 'x.yaml'));
  assert.deepEqual(credentialValueProblems(plan!.gateway, SECRETS), []);
  const bad = credentialValueProblems(plan!.gateway, { ...SECRETS, GITHUB_TOKEN: 'tok\r\nX-Evil: 1' });
  assert.equal(bad.length, 2);
  assert.match(bad[0]!, /^secret GITHUB_TOKEN, used by credential github-api, holds a line break, a control character or a character beyond Latin-1/);
  assert.ok(bad.every((m) => !m.includes('X-Evil')));
});

test('a control character or a character beyond Latin-1 in a credential\'s value is refused by name too (it would throw in the gateway)', () => {
  const [plan] = planSteps(parsePipeline(ISSUE_EXAMPLE, 'x.yaml'));
  for (const value of ['tok\u0001en-value', 'tok€en-value']) {
    const bad = credentialValueProblems(plan!.gateway, { ...SECRETS, GITHUB_TOKEN: value });
    assert.ok(bad.some((m) => m.startsWith('secret GITHUB_TOKEN, used by credential github-api')), JSON.stringify(bad));
    assert.ok(bad.every((m) => !m.includes(value)));
  }
});

test('a credential for one host under a ruled `*.` entry keeps that entry\'s rule, and names the secrets it is made of', () => {
  const text = `version: 1
name: x
project: { path: . }
secrets: [GITHUB_TOKEN]
credentials:
  gh:
    hosts: [api.github.com]
    header: { Authorization: "Bearer \${GITHUB_TOKEN}" }
steps:
  - id: s
    image: runner/base:latest
    run: "true"
    credentials: [gh]
    egress:
      - { host: "*.github.com", methods: [GET] }
`;
  const [plan] = planSteps(parsePipeline(text, 'x.yaml'));
  const inspect = inspectionFor(plan!.gateway!, { GITHUB_TOKEN: 'ghp_0123456789abcdef' })!;
  const api = inspect.hosts.find((h) => h.host === 'api.github.com')!;
  assert.deepEqual(api.methods, ['GET'], 'the credential does not lift the *. rule');
  assert.deepEqual(api.credential?.secrets, ['GITHUB_TOKEN']);
  assert.equal(api.credential?.headers.Authorization, 'Bearer ghp_0123456789abcdef');
});
