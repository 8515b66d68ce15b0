/**
 * Attacks on delivery through runner serve's API, played for real: a hostile
 * step's commits, a hostile page in the visitor's browser, a caller who
 * repeats or floods. Each test names the attack it plays.
 */
import assert from 'node:assert/strict';
import { access, readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { git, IMAGE, projectsForThisFile, runCli, serveFolder, until, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

function commit(f: Fixture, message: string): void {
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', message);
}

/** A project whose data.txt has ten lines and that has 15 small files c00..c14; a server over `steps` (pipeline name → its steps). */
async function setUp(steps: Record<string, string>) {
  const f = await fixture();
  await writeFile(path.join(f.project, 'data.txt'), `${[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].join('\n')}\n`);
  for (let i = 0; i < 15; i++) await writeFile(path.join(f.project, `c${String(i).padStart(2, '0')}`), 'base\n');
  commit(f, 'ten lines, fifteen files');
  const files = Object.fromEntries(
    Object.entries(steps).map(([name, body]) => [`${name}.yaml`, `version: 1\nname: ${name}\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n${body}`]),
  );
  const s = await serveFolder(f, files, '127.0.0.1:0');
  const recordOf = async (id: string) => JSON.parse(await readFile(path.join(f.home, 'runs', id, 'run.json'), 'utf8'));
  const runOf = async (name: string) => {
    const t = await call(s.base, 'POST', `/api/pipelines/${name}/runs`);
    assert.equal(t.status, 202, JSON.stringify(t.json));
    const rec = await until(`run of ${name} to end`, async () => {
      const r = (await call(s.base, 'GET', `/api/runs/${t.json.runId}`)).json;
      return ['queued', 'starting', 'running'].includes(r.status) ? undefined : r;
    }, 60_000);
    assert.equal(rec.status, 'succeeded', JSON.stringify(rec.error));
    return rec.runId as string;
  };
  return { f, s, recordOf, runOf };
}

async function call(base: string, method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  return { status: res.status, json: await res.json() };
}

/** fetch cannot set Host; http.request can. */
function postWithHost(base: string, p: string, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${p}`, { method: 'POST', headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', reject);
    req.end('{}');
  });
}

const exists = (p: string) => access(p).then(() => true, () => false);

test("attack: a step's .gitattributes picks a merge driver the project's config defines (merge.renormalize on); a merge through the API runs no driver", { timeout: 120_000 }, async () => {
  const { f, s, recordOf, runOf } = await setUp({
    driver: `  - id: evil\n    run: |\n      printf '* merge=evil\\n' > .gitattributes\n      sed -i 's/^1$/step/' data.txt\n`,
  });
  const pwned = path.join(f.root, 'pwned');
  try {
    // The user's config: renormalize on, and a merge driver for files they mark themselves.
    git(f.project, 'config', 'merge.renormalize', 'true');
    git(f.project, 'config', 'merge.evil.driver', `touch ${pwned}; cp %B %A`);
    const id = await runOf('driver');
    // Both sides change data.txt, so git merges its content: with the step's attribute, by the driver.
    await writeFile(path.join(f.project, 'data.txt'), `${[1, 2, 3, 4, 5, 6, 7, 8, 9, 'ten-main'].join('\n')}\n`);
    commit(f, 'main changes line 10');

    const merged = await call(s.base, 'POST', `/api/runs/${id}/merge`, { into: 'main' });
    assert.equal(merged.status, 200, JSON.stringify(merged.json));
    assert.equal(await exists(pwned), false, 'the driver the step picked did not run');
    assert.equal(await readFile(path.join(f.project, 'data.txt'), 'utf8'), `${['step', 2, 3, 4, 5, 6, 7, 8, 9, 'ten-main'].join('\n')}\n`, "git's own merge, both changes in");
    assert.equal((await recordOf(id)).deliveries.length, 1);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('attack: the same run merged three times at once (a double click, two tabs): one merge, the others refused as already merged; a target git would read as a revision (main@{0}) is refused before any merge; a flood of refusals keeps the record bounded', { timeout: 600_000 }, async () => {
  const { f, s, recordOf, runOf } = await setUp({ plain: `  - id: plain\n    run: echo plain > plain.txt\n` });
  try {
    const id = await runOf('plain');
    const before = git(f.project, 'rev-parse', 'main');
    const all = await Promise.all([1, 2, 3].map(() => call(s.base, 'POST', `/api/runs/${id}/merge`, { into: 'main' })));
    assert.deepEqual(all.map((r) => r.status).sort(), [200, 409, 409], JSON.stringify(all.map((r) => r.json)));
    for (const r of all.filter((x) => x.status === 409)) {
      assert.equal(r.json.code, 'not_deliverable');
      assert.match(r.json.error, /main already holds run \S+'s work .*: nothing to merge$/);
    }
    assert.equal(git(f.project, 'rev-list', '--count', `${before}..main`, '--merges'), '1', 'one merge commit');
    assert.deepEqual((await recordOf(id)).deliveries.map((d: any) => [d.ok, d.refused ?? null]).sort(), [[false, 'not_deliverable'], [false, 'not_deliverable'], [true, null]]);

    // main@{0} is main to git's rev-parse: the merge ran, and only update-ref refused the name, as a "conflict".
    const head = git(f.project, 'rev-parse', 'main');
    for (const into of ['main@{0}', 'main/../main', '.main', 'main.lock']) {
      const r = await call(s.base, 'POST', `/api/runs/${id}/merge`, { into });
      assert.deepEqual([r.status, r.json.code], [400, 'bad_request'], into);
      assert.match(r.json.error, /^"into" must be a branch name: (it|a part of it) /);
    }
    const cli = await runCli(['merge', id, '--into', 'main@{0}', '--home', f.home]);
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /refused \(not_deliverable\): main@\{0\} is not a branch name \(it holds "@\{"\)/);
    assert.equal(git(f.project, 'rev-parse', 'main'), head);

    // Each refused attempt is written into the record: a caller repeating one cannot grow it without end.
    for (let i = 0; i < 60; i++) assert.equal((await call(s.base, 'POST', `/api/runs/${id}/merge`, { into: `nope-${i}` })).status, 409);
    const deliveries = (await recordOf(id)).deliveries as any[];
    assert.equal(deliveries.length, 51, 'the merge that was done and the newest 50 refusals');
    assert.equal(deliveries.filter((d) => d.ok).length, 1);
    assert.equal(deliveries.at(-1).into, 'nope-59');
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test("attack: a step's change conflicts in many files: the refusal names ten in its message (and in the record), every one in details", { timeout: 120_000 }, async () => {
  const { f, s, recordOf, runOf } = await setUp({ many: `  - id: many\n    run: for c in c*; do echo step >> "$c"; done\n` });
  try {
    const id = await runOf('many');
    for (let i = 0; i < 15; i++) await writeFile(path.join(f.project, `c${String(i).padStart(2, '0')}`), 'base\nmain\n');
    commit(f, 'main changes them all');
    const r = await call(s.base, 'POST', `/api/runs/${id}/merge`, {});
    assert.deepEqual([r.status, r.json.code], [409, 'conflict']);
    assert.equal(r.json.details.length, 15);
    assert.match(r.json.error, /conflicts in c00, c01, c02, c03, c04, c05, c06, c07, c08, c09 and 5 more; main is unchanged/);
    assert.equal((await recordOf(id)).deliveries[0].message, r.json.error);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test("attack: another site's page in the visitor's browser posts merge, apply and rerun (text/plain, a form, a rebound DNS name): all refused, nothing recorded or queued", { timeout: 120_000 }, async () => {
  const { f, s, recordOf, runOf } = await setUp({ plain: `  - id: plain\n    run: echo plain > plain.txt\n` });
  try {
    const id = await runOf('plain');
    const head = git(f.project, 'rev-parse', 'main');
    const runsBefore = (await call(s.base, 'GET', '/api/runs')).json.length;
    const attempts: Array<[string, unknown, Record<string, string>]> = [
      ['merge', '{"into":"main"}', { 'content-type': 'text/plain', origin: 'https://attacker.example', 'sec-fetch-site': 'cross-site' }],
      ['apply', 'x=1', { 'content-type': 'application/x-www-form-urlencoded', origin: 'null' }],
      ['rerun', undefined, { 'sec-fetch-site': 'same-site' }], // another port of this machine, without an Origin
      ['merge', '{}', { origin: `http://localhost:${new URL(s.base).port}` }], // another name for this host is another origin
    ];
    for (const [route, body, headers] of attempts) {
      const r = await call(s.base, 'POST', `/api/runs/${id}/${route}`, body, headers);
      assert.equal(r.status, 403, `${route} ${JSON.stringify(headers)}: ${JSON.stringify(r.json)}`);
    }
    for (const route of ['merge', 'apply', 'rerun']) assert.equal(await postWithHost(s.base, `/api/runs/${id}/${route}`, 'rebound.attacker.example'), 403);
    assert.equal(git(f.project, 'rev-parse', 'main'), head);
    assert.equal(git(f.project, 'status', '--porcelain'), '');
    assert.equal((await recordOf(id)).deliveries, undefined);
    assert.equal((await call(s.base, 'GET', '/api/runs')).json.length, runsBefore);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('attack: two runs applied into one checkout at once: each found it clean, and both wrote into it; now one applies, the other is refused target_dirty', { timeout: 120_000 }, async () => {
  const { f, s, recordOf, runOf } = await setUp({ one: `  - id: one\n    run: echo one >> c00\n`, two: `  - id: two\n    run: echo two >> c01\n` });
  try {
    const one = await runOf('one');
    const two = await runOf('two');
    for (let round = 0; round < 3; round++) {
      git(f.project, 'checkout', '--', '.');
      const [a, b] = await Promise.all([one, two].map((id) => call(s.base, 'POST', `/api/runs/${id}/apply`)));
      assert.deepEqual([a!.status, b!.status].sort(), [200, 409], JSON.stringify([a!.json, b!.json]));
      assert.equal([a!, b!].find((r) => r.status === 409)!.json.code, 'target_dirty');
      assert.equal(git(f.project, 'status', '--porcelain').split('\n').length, 1, "one run's change in the checkout, not both");
    }
    assert.equal((await recordOf(one)).deliveries.length + (await recordOf(two)).deliveries.length, 6);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});
