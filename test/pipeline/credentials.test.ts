import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PipelineError, formatPipelineIssue } from '../../src/common/errors.js';
import { fillTemplate, headerNameProblem, parseSecretTemplate, templateSecrets } from '../../src/pipeline/credentials.js';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { ISSUE_EXAMPLE } from '../fixtures/credentials-pipeline.js';


function problems(text: string): string[] {
  try {
    parsePipeline(text, 'x.yaml');
  } catch (err) {
    assert.ok(err instanceof PipelineError, String(err));
    return err.issues.map((i) => formatPipelineIssue('x.yaml', i));
  }
  return [];
}

/** The issue's example with one line replaced. */
function edited(from: string, to: string, text = ISSUE_EXAMPLE): string {
  assert.ok(text.includes(from), `the example holds ${from}`);
  return text.replace(from, to);
}

test('the file of the issue parses: credentials, egress entries with rules (methods upper-cased), an agent naming its credentials', () => {
  const p = parsePipeline(ISSUE_EXAMPLE, 'x.yaml');
  assert.deepEqual(p.credentials?.['github-api'], { hosts: ['api.github.com'], header: { Authorization: 'Bearer ${GITHUB_TOKEN}' } });
  assert.deepEqual(p.credentials?.['github-git']?.basic, { username: 'x-access-token', password: '${GITHUB_TOKEN}' });
  assert.deepEqual(p.agents?.coder?.credentials, ['github-api', 'github-git', 'company-npm']);
  assert.deepEqual(p.agents?.coder?.egress?.[2], { host: 'api.github.com', methods: ['GET', 'POST'], paths: ['/repos/acme/app/**'] });
  assert.equal(p.agents?.coder?.egress?.[0], 'registry.npmjs.org');
});

test('inspect: all on defaults, an agent or a step; any other value is refused', () => {
  const p = parsePipeline(edited('  coder:\n    use: claude-code\n', '  coder:\n    use: claude-code\n    inspect: all\n'), 'x.yaml');
  assert.equal(p.agents?.coder?.inspect, 'all');
  const bad = problems(edited('  coder:\n    use: claude-code\n', '  coder:\n    use: claude-code\n    inspect: yes\n'));
  assert.equal(bad.length, 1);
  assert.match(bad[0]!, /^x\.yaml:\d+:\d+ agents\.coder\.inspect: expected inspect: all .* or inspect: rules/);
});

test('a credential naming a host the step may not reach is refused, with the host to add and where', () => {
  const out = problems(edited('      - npm.company.example\n', ''));
  assert.equal(out.length, 1, out.join('\n'));
  assert.match(out[0]!, /agents\.coder\.credentials\[2\]: credential company-npm is for npm\.company\.example, which step "implement" may not reach: add npm\.company\.example to the egress: of agents\.coder, or drop company-npm from its credentials \(from agents\.coder\.credentials\)/);
});

test('a credential reached through a `*.` suffix of the egress is allowed; a `*.` credential needs a suffix as wide', () => {
  assert.deepEqual(problems(edited('      - npm.company.example\n', '      - "*.company.example"\n')), []);
  const wide = edited('    hosts: [npm.company.example]', '    hosts: ["*.company.example"]');
  const out = problems(wide);
  assert.equal(out.length, 1, out.join('\n'));
  assert.match(out[0]!, /credential company-npm is for \*\.company\.example, which step "implement" may not reach: add \*\.company\.example/);
});

test('a step with no egress that takes credentials from defaults is refused, saying it has none', () => {
  const text = `version: 1
name: x
secrets: [T]
credentials:
  c: { hosts: [api.example.com], header: { X-Token: "\${T}" } }
defaults:
  image: runner/base:latest
  credentials: [c]
steps:
  - id: a
    run: "true"
`;
  const out = problems(text);
  assert.equal(out.length, 1, out.join('\n'));
  assert.match(out[0]!, /defaults\.credentials\[0\]: credential c is for api\.example\.com, which step "a" may not reach: add api\.example\.com to egress: on step "a" \(it has none\)/);
});

test('a step given network: while its agent names credentials is refused: a gateway adds them', () => {
  const out = problems(edited('    agent: coder\n', '    agent: coder\n    network: bridge\n'));
  assert.ok(out.some((l) => /agents\.coder\.credentials: step "implement" takes network: bridge from steps\[0\], so it has no gateway to add its credentials \(from agents\.coder\.credentials\): give it egress:/.test(l)), out.join('\n'));
});

test('credentials: or inspect: beside network: on one level is refused', () => {
  const out = problems(edited('    agent: coder\n', '    agent: coder\n    network: bridge\n    inspect: all\n    credentials: [github-api]\n'));
  assert.ok(out.some((l) => /steps\[0\]\.credentials: network: and credentials: together/.test(l)), out.join('\n'));
  assert.ok(out.some((l) => /steps\[0\]\.inspect: network: and inspect: together/.test(l)), out.join('\n'));
});

test('an unknown credential name is refused with the known ones, and a "did you mean"', () => {
  const out = problems(edited('credentials: [github-api, github-git, company-npm]', 'credentials: [github-apl, github-git, company-npm]'));
  assert.equal(out.length, 1, out.join('\n'));
  assert.match(out[0]!, /agents\.coder\.credentials\[0\]: unknown credential "github-apl" \(did you mean "github-api"\?\); known credentials: github-api, github-git, company-npm/);
});

test('a ${SECRET} not in secrets: is refused where it is written; one that is not a name is refused by the schema', () => {
  const out = problems(edited('"Bearer ${NPM_TOKEN}"', '"Bearer ${NPM_TOKN}"'));
  assert.equal(out.length, 1, out.join('\n'));
  assert.match(out[0]!, /^x\.yaml:\d+:\d+ credentials\.company-npm\.header\.Authorization: credential company-npm uses \$\{NPM_TOKN\}, which is not declared in the top-level secrets: list: add NPM_TOKN there/);
  const bad = problems(edited('"Bearer ${NPM_TOKEN}"', '"Bearer ${{ secrets.NPM_TOKEN }}"'));
  assert.equal(bad.length, 1, bad.join('\n'));
  assert.match(bad[0]!, /credentials\.company-npm\.header\.Authorization: .*"\$\{" starts a secret's name, written \$\{NAME\}/);
});

test('two credentials for one host in one step are refused', () => {
  const text = edited('    hosts: [npm.company.example]', '    hosts: [api.github.com]');
  const out = problems(text);
  assert.ok(out.some((l) => /step "implement" has two credentials for api\.github\.com, github-api and company-npm: the gateway sets one per host/.test(l)), out.join('\n'));
});

test('hop-by-hop headers and Host are refused, saying what a credential sets', () => {
  for (const h of ['Connection', 'Transfer-Encoding', 'Host', 'proxy-authorization', 'Content-Length']) {
    const out = problems(edited('{ Authorization: "Bearer ${NPM_TOKEN}" }', `{ ${h}: "Bearer \${NPM_TOKEN}" }`));
    assert.equal(out.length, 1, `${h}: ${out.join('\n')}`);
    assert.match(out[0]!, new RegExp(`credentials\\.company-npm\\.header\\.${h}: header ${h} (is a hop-by-hop header|is the host|frames the request).*: a credential sets a header the host reads, like Authorization or X-Api-Key`));
  }
  assert.match(headerNameProblem('X Token')!, /is not a header name/);
  assert.equal(headerNameProblem('X-Api-Key'), undefined);
});

test('a credential has header: or basic:, one of them; no port in its hosts', () => {
  const out = problems(edited('    basic: { username: x-access-token, password: "${GITHUB_TOKEN}" }', '    header: { X: "${GITHUB_TOKEN}" }\n    basic: { username: x-access-token, password: "${GITHUB_TOKEN}" }'));
  assert.ok(out.some((l) => /credentials\.github-git: a credential has header: .* or basic: .*: one of them/.test(l)), out.join('\n'));
  const port = problems(edited('    hosts: [github.com]', '    hosts: ["github.com:8443"]'));
  assert.ok(port.some((l) => /credentials\.github-git\.hosts\[0\]: "github\.com:8443": a credential holds on every port its host is allowed on: write the name alone \(github\.com\)/.test(l)), port.join('\n'));
});

test('methods that are not HTTP tokens and paths not starting with / are refused, each with the form to write', () => {
  const m = problems(edited('methods: [GET, post]', 'methods: ["GET /x"]'));
  assert.equal(m.length, 1, m.join('\n'));
  assert.match(m[0]!, /agents\.coder\.egress\[2\]\.methods\[0\]: expected an HTTP method like GET or POST/);
  const p = problems(edited('paths: ["/repos/acme/app/**"]', 'paths: ["repos/acme/app/**"]'));
  assert.equal(p.length, 1, p.join('\n'));
  assert.match(p[0]!, /agents\.coder\.egress\[2\]\.paths\[0\]: "repos\/acme\/app\/\*\*": a path starts with "\/", like "\/repos\/acme\/app\/\*\*"/);
  const q = problems(edited('paths: ["/repos/acme/app/**"]', 'paths: ["/search?q=x"]'));
  assert.match(q[0]!, /paths are matched without the query or fragment: write the path alone, like "\/search"/);
  const empty = problems(edited('methods: [GET, post]', 'methods: []'));
  assert.match(empty[0]!, /expected at least one method, like \[GET\]; leave methods: out to allow any/);
});

test('an egress entry with an unknown key gets a "did you mean"; one that is neither a host nor an entry says both forms', () => {
  const out = problems(edited('{ host: github.com, paths:', '{ host: github.com, path:'));
  assert.ok(out.some((l) => /agents\.coder\.egress\[3\]\.path: unknown key "path" \(did you mean "paths"\?\)/.test(l)), out.join('\n'));
  const num = problems(edited('      - registry.npmjs.org\n', '      - 42\n'));
  assert.ok(num.some((l) => /agents\.coder\.egress\[0\]: expected a host like registry\.npmjs\.org, or \{ host: api\.github\.com/.test(l)), num.join('\n'));
});

test('a host listed twice in one egress list, once with rules, is refused', () => {
  const out = problems(edited('      - npm.company.example\n', '      - npm.company.example\n      - api.github.com\n'));
  assert.equal(out.length, 1, out.join('\n'));
  assert.match(out[0]!, /agents\.coder\.egress\[3\]: api\.github\.com is listed twice in this egress: \(also at \[2\]\)/);
});

test("a credential's secret also given to any step or agent as a secret is refused: it would be in a container", () => {
  const out = problems(edited('    secrets: [DB_PASSWORD]', '    secrets: [DB_PASSWORD, GITHUB_TOKEN]'));
  assert.ok(out.some((l) => /steps\[0\]\.secrets\[1\]: GITHUB_TOKEN is in credential github-api, which keeps it out of every step, and in the secrets: of step "implement"/.test(l)), out.join('\n'));
  // another step, one that does not use the credential at all
  const other = problems(`${ISSUE_EXAMPLE}  - id: other\n    image: runner/base:latest\n    run: "true"\n    secrets: [NPM_TOKEN]\n`);
  assert.ok(other.some((l) => /steps\[1\]\.secrets\[0\]: NPM_TOKEN is in credential company-npm, which keeps it out of every step, and in the secrets: of step "other"/.test(l)), other.join('\n'));
});

test('credentials: [] on a step drops what its agent names; a step naming credentials of its own takes them over its agent', () => {
  assert.deepEqual(problems(edited('    agent: coder\n', '    agent: coder\n    network: bridge\n    credentials: []\n')), []);
  const own = problems(edited('    agent: coder\n', '    agent: coder\n    credentials: [github-api]\n'));
  assert.deepEqual(own, []);
});

test('templates: ${NAME} parts, a lone $ kept, values filled in', () => {
  assert.deepEqual(parseSecretTemplate('Bearer ${A}-$x-${B}'), [{ text: 'Bearer ' }, { secret: 'A' }, { text: '-$x-' }, { secret: 'B' }]);
  assert.deepEqual(templateSecrets('${A}${A}${B}'), ['A', 'B']);
  assert.equal(fillTemplate('Bearer ${A}', { A: 'tok' }), 'Bearer tok');
  assert.throws(() => fillTemplate('${A}', {}), /secret A has no value/);
  assert.ok(!Array.isArray(parseSecretTemplate('${A')));
});

test("defaults' credentials: and inspect: are for the steps that have a gateway: beside defaults' network:, and on a plain step with a network, they are not refused", () => {
  const text = `version: 1
name: x
secrets: [T, ANTHROPIC_API_KEY]
credentials:
  c: { hosts: [api.example.com], header: { X-Token: "\${T}" } }
defaults:
  image: runner/base:latest
  network: none
  inspect: all
  credentials: [c]
agents:
  a: { use: claude-code, egress: [api.example.com] }
steps:
  - id: plain
    run: "true"
  - id: agent
    agent: a
    prompt: go
`;
  assert.deepEqual(problems(text), []);
});

test('a path glob that could never match a normalized path is refused at load, not left to refuse every request', () => {
  for (const glob of ['/repos/acme/app/../**', '/repos//acme/**', '/repos/**x', '/a%zz/**']) {
    const p = problems(edited('paths: ["/repos/acme/app/**"]', `paths: [${JSON.stringify(glob)}]`));
    assert.equal(p.length, 1, `${glob}: ${p.join('\n')}`);
    assert.match(p[0]!, /agents\.coder\.egress\[2\]\.paths\[0\]: /, p[0]);
  }
  assert.deepEqual(problems(edited('methods: [GET, post]', 'methods: [GET, M-SEARCH]')), [], 'a method with a dash is an HTTP token');
});
