/**
 * The dashboard in a real browser: Debian's Chromium, headless, driven by
 * playwright-core. A run triggered from the page appears with its live log,
 * what a step prints is shown as text (never markup), a flow run shows its
 * attempts, routes and parallel steps, the token's login page guards it all,
 * and screenshots of each view are taken and checked.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { BIG_DIFF, BIG_DIFF_STEP } from '../fixtures/big-diff.js';
import { ModelServer } from '../fixtures/model-server.js';
import { git, HOLD_UNTIL_RELEASED, IMAGE, projectsForThisFile, releaseStep, serveFolder, until, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const CHROMIUM = '/usr/bin/chromium';
// Chromium on a closed network: no background calls home, no GPU, no sandbox (root in CI).
const FLAGS = ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const HOSTILE = `<script>window.pwned=1</script><img src=x onerror="window.pwned=2">`;

let browser: Browser;
before(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false, args: FLAGS }).catch((err: Error) => {
    throw new Error(`cannot start ${CHROMIUM} (make browser installs Debian's chromium): ${err.message}`);
  });
});
after(async () => browser?.close());

function startServe(f: Fixture, listen: string, env: NodeJS.ProcessEnv = {}) {
  const talk = `version: 1
name: talk
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
schedule:
  - cron: "0 6 * * *"
steps:
  - id: talk
    run: |
      echo 'written by the step' > note.txt
      for i in 1 2 3; do echo "line $i ${HOSTILE.replace(/"/g, '\\"')}"; sleep 0.3; done
`;
  const greet = `version: 1
name: greet
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
inputs:
  who: { description: who to greet }
  punctuation: { default: "!" }
steps:
  - id: greet
    run: echo "hello \${{ inputs.who }}\${{ inputs.punctuation }}"
`;
  const broken = 'version: 1\nname: broken\nsteps: not-a-list\n';
  const needsKey = `version: 1\nname: needs-key\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsecrets: [RUNNER_TEST_NO_SUCH_KEY]\nsteps:\n  - id: s\n    secrets: [RUNNER_TEST_NO_SUCH_KEY]\n    run: "true"\n`;
  return serveFolder(f, { 'talk.yaml': talk, 'greet.yaml': greet, 'broken.yaml': broken, 'needs-key.yaml': needsKey }, listen, { env: { RUNNER_TEST_NO_SUCH_KEY: '', ...env } });
}

/** A count as the dashboard writes it: 950, 1.4k, 37.8k, 1.2M. */
function asPeopleWrite(n: number): string {
  if (n < 1000) return String(n);
  if (n < 999_950) return `${Math.round(n / 100) / 10}k`;
  return `${Math.round(n / 100_000) / 10}M`;
}

/** A screenshot, checked: a PNG of the viewport's size with more than a blank page in it. */
async function screenshot(page: Page, f: Fixture, name: string): Promise<Buffer> {
  const file = path.join(process.env.RUNNER_SCREENSHOTS ?? f.root, `dashboard-${name}.png`);
  await page.screenshot({ path: file });
  const png = await readFile(file);
  assert.deepEqual([...png.subarray(1, 4)].map((c) => String.fromCharCode(c)).join(''), 'PNG', `${file} is a PNG`);
  assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [1280, 800], `${file} has the viewport's size`);
  assert.ok(png.length > 15_000, `${file} holds a rendered page (${png.length} bytes), not a blank one`);
  return png;
}

test('a run triggered from the page appears with its live log, printed markup shown as text', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const s = await startServe(f, '127.0.0.1:0');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  try {
    await page.goto(s.base);
    const talk = page.locator('#pipelines tr[data-pipeline="talk"]');
    await talk.waitFor();
    assert.match(await talk.innerText(), /in \d+ (h|min)/, 'the next scheduled run is shown');
    assert.match(await page.locator('#pipelines').innerText(), /broken\.yaml[\s\S]*steps/, "a broken file's errors are shown");
    const home = await screenshot(page, f, 'home');
    assert.equal(await page.getByRole('button', { name: 'Log out' }).count(), 0, 'no token, no session to end');

    await talk.getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/#\/runs\/\d{8}-\d{6}-[a-z0-9]+$/);
    const runId = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    await page.locator('#log').getByText('line 3 <script>').waitFor({ timeout: 60_000 });
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 60_000 });
    await page.locator('#diff .diff-file[data-path="note.txt"] .d2h-ins').first().waitFor();

    const log = await page.locator('#log').innerText();
    for (const i of [1, 2, 3]) assert.ok(log.includes(`[talk] line ${i} ${HOSTILE}`), `line ${i} is shown as the characters printed:\n${log}`);
    assert.equal(await page.locator('#log script, #log img, #main script, #main img').count(), 0, 'no element was made from step output');
    assert.equal(await page.evaluate(() => (globalThis as { pwned?: number }).pwned), undefined, 'no step output ran as script');
    assert.match(await page.locator('#diff .d2h-ins .d2h-code-line-ctn').first().innerText(), /^written by the step$/, 'a small change opens its files at once');
    assert.match(await page.locator('#steps').innerText(), /talk\s+completed\s+0/);
    const run = await screenshot(page, f, 'run');
    assert.notDeepEqual(run, home);

    await page.getByRole('link', { name: '← all runs' }).click();
    const row = page.locator(`#runs tr[data-run="${runId}"]`);
    await row.waitFor();
    assert.match(await row.innerText(), /talk\s+succeeded/);

    // A pipeline with inputs asks for them; the run shows them, as text.
    await page.locator('#pipelines tr[data-pipeline="greet"]').getByRole('button', { name: 'Run now' }).click();
    await page.getByLabel('who').fill('<b>world</b>');
    assert.equal(await page.getByLabel('punctuation').inputValue(), '!', 'defaults are filled in');
    await screenshot(page, f, 'inputs');
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL((u) => u.hash.startsWith('#/runs/') && u.hash !== `#/runs/${runId}`);
    await page.locator('#log').getByText('hello <b>world</b>!').waitFor({ timeout: 60_000 });
    assert.match(await page.locator('#inputs').innerText(), /who = <b>world<\/b>\s+punctuation = !/);
    assert.equal(await page.locator('#main b').count(), 0);
    assert.deepEqual(problems, [], 'the page threw no errors');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('a run that could not start shows why: on its page, in the recent runs, on its pipeline', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const s = await startServe(f, '127.0.0.1:0');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  try {
    await page.goto(s.base);
    await page.locator('#pipelines tr[data-pipeline="needs-key"]').getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/#\/runs\/\d{8}-\d{6}-[a-z0-9]+$/);
    const runId = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    await page.locator('.run-head .badge.not_started').waitFor({ timeout: 30_000 });
    assert.match(await page.locator('.run-head .error').innerText(), /secret RUNNER_TEST_NO_SUCH_KEY named by the pipeline is not set/);
    await page.locator('#diff').getByText('The run did not start: it changed nothing.').waitFor();
    await screenshot(page, f, 'not-started');
    await page.getByRole('link', { name: '← all runs' }).click();
    await page.locator(`#runs tr[data-run="${runId}"]`).getByText('not started').waitFor();
    const failure = page.locator('#pipelines tr[data-pipeline="needs-key"] .last-failure');
    await failure.waitFor();
    assert.match(await failure.innerText(), /Its last run did not start \(.+\): secret RUNNER_TEST_NO_SUCH_KEY/);
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test("an agent step's usage, and the hosts a step was refused, are on its run page", { timeout: 90_000 }, async () => {
  const f = await fixture();
  const model = await ModelServer.start({
    turns: [{ tool: { name: 'Write', input: { file_path: '/home/agent/run-workspace/done.txt', content: 'done\n' } } }, { text: 'Wrote done.txt.' }],
    usage: { input: 700, output: 12 },
  });
  const agentFile = `version: 1\nname: agentic\nproject: { path: ${f.project}, push: never }\nsecrets: [ANTHROPIC_API_KEY]\nagents:\n  coder: { use: claude-code, base_url: "${model.url}" }\nsteps:\n  - id: implement\n    agent: coder\n    prompt: write done.txt\n  - id: fetch\n    image: runner/toolchain:latest\n    egress: [allowed.example]\n    run: curl -s http://denied.example/ || true\n`;
  const s = await serveFolder(f, { 'agentic.yaml': agentFile }, '127.0.0.1:0', { env: { ANTHROPIC_API_KEY: 'sk-ant-dashboard-test-000000000' } });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  try {
    await page.goto(s.base);
    await page.locator('#pipelines tr[data-pipeline="agentic"]').getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/#\/runs\//);
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 60_000 });
    const usage = page.locator('#steps tr[data-step="implement"] .usage');
    // as the gateway metered it: what the model reported, call by call
    const seen = model.reportedUsage();
    const tokens = `${asPeopleWrite(seen.input)} in / ${asPeopleWrite(seen.output)} out tokens`;
    await usage.getByText(new RegExp(`${tokens}, \\$\\d+\\.\\d{3,4}, 2 turns, ${seen.calls} calls`)).waitFor();
    // its row: what it said last, folded until asked; its lines in the log, alone when asked
    const row = page.locator('#steps tr[data-step="implement"]');
    assert.equal(await row.locator('details.agent-said').evaluate((d) => (d as unknown as { open: boolean }).open), false, 'the final message folds');
    await row.locator('details.agent-said summary').click();
    await row.locator('details.agent-said .text').getByText('Wrote done.txt.').waitFor();
    await page.waitForTimeout(2500); // a redraw keeps it open
    assert.equal(await row.locator('details.agent-said').evaluate((d) => (d as unknown as { open: boolean }).open), true, 'opened, it stays open as the page redraws');
    await row.locator('button.step-name').click();
    assert.match(await page.locator('#log').innerText(), /done\.txt/, 'the transcript names the file the agent wrote');
    assert.equal(await page.locator('#log').getAttribute('data-only'), 'implement', "the implement step's lines alone");
    assert.equal(await page.locator('#log .line[data-step="fetch"]:not([hidden])').count(), 0);
    await page.locator('#steps tr[data-step="fetch"] .note.egress').getByText('egress refused: denied.example ×1').waitFor();
    await screenshot(page, f, 'agent-run');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
    await model.close();
  }
  assert.equal(await s.exited, 0, s.out());
});

test('a flow run shows each attempt, the route it took and the steps that ran at once', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const flowy = `version: 1
name: flowy
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
steps:
  - id: flaky
    retries: { max: 1, backoff: 1s }
    run: |
      echo "try $RUNNER_ATTEMPT"
      [ "$RUNNER_ATTEMPT" -ge 2 ]
  - id: implement
    run: echo "implementation $RUNNER_ATTEMPT" > impl.txt
  - id: review
    outputs: [verdict]
    run: |
      if [ "$RUNNER_ATTEMPT" -ge 2 ]; then echo verdict=APPROVED; else echo verdict=CHANGES_REQUESTED; fi >> "$RUNNER_OUTPUT"
    route:
      output: verdict
      to: { CHANGES_REQUESTED: implement }
  - id: ui
    needs: [review]
    run: sleep 2; echo ui > ui.txt
  - id: docs
    needs: [review]
    run: sleep 2; echo docs > docs.txt
`;
  const s = await serveFolder(f, { 'flowy.yaml': flowy }, '127.0.0.1:0');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  try {
    await page.goto(s.base);
    await page.locator('#pipelines tr[data-pipeline="flowy"]').getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/#\/runs\//);
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 90_000 });
    const names = await page.locator('#steps tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-step')));
    assert.deepEqual(names.slice(0, 6), ['flaky', 'flaky#2', 'implement', 'review', 'implement#2', 'review#2'], 'every run of a step, in order, by its name');
    assert.deepEqual(names.slice(6).sort(), ['docs', 'ui']);
    const row = (name: string) => page.locator(`#steps tr[data-step="${name}"]`).innerText();
    assert.match(await row('flaky'), /retried after 1s/);
    assert.match(await row('flaky'), /failed/);
    assert.match(await row('flaky#2'), /attempt 2[\s\S]*completed/);
    assert.match(await row('implement#2'), /attempt 2/);
    assert.match(await row('ui'), /lane run\/\S+\+ui: merged/);
    assert.match(await row('ui'), /ran with: docs/);
    assert.match(await row('docs'), /ran with: ui/);
    assert.doesNotMatch(await row('implement'), /ran with/, 'steps one after the other did not run at once');
    assert.match(await page.locator('#flow').innerText(), /review → implement \(verdict=CHANGES_REQUESTED\), visit 2/);
    // The timeline: a bar per step, the two lanes' bars side by side in time.
    assert.equal(await page.locator('#steps .timeline .bar').count(), 8);
    // the page redraws as it polls: a bar read just as its row is replaced has no box, so read it again
    const box = async (name: string) => {
      for (let i = 0; i < 50; i++) {
        const b = await page.locator(`#steps tr[data-step="${name}"] .bar`).boundingBox();
        if (b) return b;
        await page.waitForTimeout(100);
      }
      throw new Error(`the bar of ${name} never had a box`);
    };
    const ui = await box('ui');
    const docs = await box('docs');
    const flaky = await box('flaky');
    assert.ok(ui.x < docs.x + docs.width && docs.x < ui.x + ui.width, `the lanes' bars overlap: ${JSON.stringify({ ui, docs })}`);
    assert.ok(flaky.x + flaky.width <= ui.x, 'the first step is left of the last ones');
    await page.locator('#log').getByText('[flaky#2] try 2').waitFor();
    await screenshot(page, f, 'flow');
    assert.deepEqual(problems, [], 'the page threw no errors');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('with a token, the dashboard asks for it and the API takes the session it sets', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const s = await startServe(f, '0.0.0.0:0', { RUNNER_TOKEN: 'correct-horse-battery' });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  try {
    await page.goto(s.base);
    await page.waitForURL(/\/login$/);
    await page.getByLabel('Token').fill('wrong');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByText('That token is not the one').waitFor();
    await screenshot(page, f, 'login');

    await page.getByLabel('Token').fill('correct-horse-battery');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('#pipelines tr[data-pipeline="talk"]').waitFor();
    const cookies = await context.cookies();
    assert.equal(cookies.length, 1);
    assert.ok(cookies[0]!.httpOnly && cookies[0]!.sameSite === 'Strict', 'the session cookie is HttpOnly and SameSite=Strict');
    assert.ok(!cookies[0]!.value.includes('correct-horse-battery'), 'the cookie does not hold the token');

    const inPage = await page.evaluate(async () => (await fetch('/api/pipelines')).status);
    assert.equal(inPage, 200, 'the session cookie opens the API to the page');
    assert.equal((await fetch(`${s.base}/api/pipelines`)).status, 401, 'without it, the API is shut');
    assert.equal((await fetch(`${s.base}/`, { redirect: 'manual' })).status, 303, 'and the dashboard sends you to log in');

    await screenshot(page, f, 'home-with-token');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login$/);
    assert.deepEqual(await context.cookies(), [], 'logging out drops the session');
    assert.equal(await page.evaluate(async () => (await fetch('/api/pipelines')).status), 401);
  } finally {
    await context.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('a diff of 758 files and 10 MB: listed a page at a time, a file opened on click and closed, a file too long drawn on request', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const venv = `version: 1\nname: venv\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: install\n    run: ${JSON.stringify(BIG_DIFF_STEP)}\n`;
  const s = await serveFolder(f, { 'venv.yaml': venv }, '127.0.0.1:0');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  // diff2html's style sheet and the bundle under the page's Content-Security-Policy: nothing refused
  page.on('console', (m) => /Content.Security.Policy/i.test(m.text()) && problems.push(m.text()));
  try {
    await page.goto(s.base);
    await page.locator('#pipelines tr[data-pipeline="venv"]').getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/#\/runs\//);
    const runId = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 120_000 });
    await page.locator('#diff .diff-summary').getByText('758 files changed').waitFor({ timeout: 30_000 });

    // the API's list, and one file's part of the patch
    const list = (await (await fetch(`${s.base}/api/runs/${runId}/diff/files`)).json()) as { files: Array<{ path: string; added: number; binary: boolean }>; total: { files: number; bytes: number } };
    assert.equal(list.files.length, BIG_DIFF.files);
    assert.ok(list.total.bytes > 10_000_000, `the patch is over 10 MB (${list.total.bytes})`);
    assert.equal(list.files.find((x) => x.path === BIG_DIFF.binaryFile)?.binary, true);
    const one = await (await fetch(`${s.base}/api/runs/${runId}/diff?file=${encodeURIComponent(list.files[0]!.path)}`)).text();
    assert.match(one, new RegExp(`^diff --git a/${list.files[0]!.path}`));
    assert.equal(one.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++')).length, list.files[0]!.added);

    // a page of files at a time, all 758 on request
    const rows = page.locator('#diff .diff-file');
    assert.equal(await rows.count(), 100);
    await screenshot(page, f, 'big-diff');
    for (;;) {
      const more = page.locator('#diff .diff-more button');
      if (!(await more.count())) break;
      await more.click();
    }
    assert.equal(await rows.count(), BIG_DIFF.files);

    // one file opens on click, drawn from its own part of the patch, and closes
    const binary = page.locator(`#diff .diff-file[data-path="${BIG_DIFF.binaryFile}"]`);
    await binary.locator('button.diff-file-head').click();
    await binary.getByText('A binary file: its content is not shown').waitFor();
    const first = page.locator('#diff .diff-file[data-path="venv/lib/python3.12/site-packages/pkg00/module_000.py"]');
    await first.locator('button.diff-file-head').click();
    await first.locator('.d2h-ins').first().waitFor();
    assert.equal(await first.locator('tr .d2h-code-line-ctn').count(), 351);
    await first.locator('button.diff-file-head').click();
    assert.equal(await first.locator('tr').count(), 0, 'a closed file holds no rows');

    // the file of 20,000 lines says so, and draws when asked
    await page.locator('#diff .diff-filter').fill('big_table');
    assert.equal(await rows.count(), 1);
    const big = page.locator(`#diff .diff-file[data-path="${BIG_DIFF.bigFile}"]`);
    await big.locator('button.diff-file-head').click();
    await big.getByText('This file changes 20,000 lines').waitFor();
    await screenshot(page, f, 'big-diff-notice');
    await big.getByRole('button', { name: 'Show anyway' }).click();
    await big.locator('tr .d2h-code-line-ctn').nth(19_999).waitFor({ state: 'attached', timeout: 60_000 });
    await screenshot(page, f, 'big-diff-file');
    assert.deepEqual(problems, [], 'the page threw no errors');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test("a step's lines show, alone when asked, while it runs; the runs list says what started each run and what it cost", { timeout: 120_000 }, async () => {
  const f = await fixture();
  const slow = `version: 1\nname: slow\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: first\n    run: echo first done\n  - id: work\n    run: |\n      echo "starting <b>work</b>"\n      sleep 15\n      echo finished > out.txt\n`;
  const s = await serveFolder(f, { 'slow.yaml': slow }, '127.0.0.1:0');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  try {
    await page.goto(s.base);
    await page.locator('#pipelines tr[data-pipeline="slow"]').getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/#\/runs\//);
    const runId = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    const work = page.locator('#log .line[data-step="work"]');
    await work.getByText('starting <b>work</b>').waitFor({ timeout: 60_000 });
    // the line comes live; the steps' table is read every 2 s, so its badge follows (a loaded CI run read it before)
    await page.locator('#steps tr[data-step="work"] .badge', { hasText: 'running' }).waitFor({ timeout: 10_000 });
    assert.ok(await work.getByText('starting <b>work</b>').isVisible(), 'the line is shown while its step runs');
    assert.equal(await page.locator('.run-head .badge').innerText(), 'running');
    assert.equal(await page.getByRole('button', { name: 'Cancel run' }).count(), 1, 'a running run can be canceled');
    // canceling asks first; dismissed, the run goes on
    await page.getByRole('button', { name: 'Cancel run' }).click();
    const ask = page.locator('dialog[open]');
    assert.match(await ask.innerText(), new RegExp(`Run ${runId} stops`));
    await ask.getByRole('button', { name: 'Cancel', exact: true }).click();
    assert.equal(await page.locator('dialog[open]').count(), 0);
    // the step's name in the table shows its lines alone
    await page.locator('#steps tr[data-step="work"] button.step-name').click();
    assert.equal(await page.locator('#run-log button.log-step[data-step="work"]').getAttribute('aria-pressed'), 'true');
    assert.doesNotMatch(await page.locator('#log').innerText(), /first done/, "one step's lines alone");
    assert.match(await page.locator('#log').innerText(), /starting <b>work<\/b>/);
    await screenshot(page, f, 'run-live');
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('#main b').count(), 0);

    await page.getByRole('link', { name: '← all runs' }).click();
    const row = page.locator(`#runs tr[data-run="${runId}"]`);
    await row.waitFor();
    assert.equal(await row.locator('td.cost').innerText(), '—', 'a run without an agent step cost nothing that was metered');
    assert.notEqual(await row.locator('td.started-by').innerText(), '', 'what started it is said');
    assert.match(await page.locator('#pipelines tr[data-pipeline="slow"] td.today').innerText(), /^(—|\$\d)/);
    await screenshot(page, f, 'home-after-runs');
    assert.deepEqual(problems, [], 'the page threw no errors');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('a run is delivered from its page: a refusal shows its reason, a merge asks naming project and branch and lands, a re-run repeats the inputs', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const s = await startServe(f, '127.0.0.1:0');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  try {
    await page.goto(s.base);
    await page.locator('#pipelines tr[data-pipeline="greet"]').getByRole('button', { name: 'Run now' }).click();
    await page.getByLabel('who').fill('delivery');
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.waitForURL(/#\/runs\//);
    const runId = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 60_000 });
    const started = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { startedBy?: { via: string } };
    assert.equal(started.startedBy?.via, 'dashboard', 'the server knows the dashboard started it');

    // the greet step changes nothing: a step that writes a file is needed to deliver; talk does
    await page.goto(s.base);
    await page.locator('#pipelines tr[data-pipeline="talk"]').getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL((u) => u.hash.startsWith('#/runs/') && u.hash !== `#/runs/${runId}`);
    const talkId = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 60_000 });

    // a dirty checkout: the apply is refused, and the page says why
    await writeFile(path.join(f.project, 'README.md'), '# changed by hand\n');
    await page.getByRole('button', { name: 'Apply…' }).click();
    const dialog = page.locator('dialog.confirm');
    await dialog.waitFor();
    assert.match(await dialog.innerText(), new RegExp(`${f.project.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`), 'the dialog names the project');
    await screenshot(page, f, 'apply-dialog');
    await dialog.getByRole('button', { name: /^Apply to / }).click();
    const refusal = page.locator('#delivery .action-result .error');
    await refusal.waitFor({ timeout: 30_000 });
    assert.match(await refusal.innerText(), /^Not applied: .*(uncommitted|dirty|changes)/i);
    await screenshot(page, f, 'apply-refused');
    git(f.project, 'checkout', '--', 'README.md');

    // a merge into main: the dialog names project and branch, and the run's work lands on main
    await page.getByRole('button', { name: 'Merge…' }).click();
    await dialog.waitFor();
    assert.equal(await dialog.locator('select').inputValue(), 'main', 'the project checkout\'s branch is offered first');
    const text = await dialog.locator('.what').innerText();
    assert.ok(text.includes(`run/${talkId}`) && text.includes(' main ') && text.includes(f.project), `the dialog says what goes where: ${text}`);
    await screenshot(page, f, 'merge-dialog');
    await dialog.getByRole('button', { name: 'Merge into main' }).click();
    await page.locator('#delivery .action-result .ok').getByText(/^Merged into main as [0-9a-f]{10}/).waitFor({ timeout: 30_000 });
    assert.equal(git(f.project, 'show', 'main:note.txt'), 'written by the step', "the run's work is on main");
    const attempts = page.locator('#delivery ul.attempts li');
    await until('both attempts listed', async () => ((await attempts.count()) === 2 ? true : undefined));
    assert.match(await attempts.nth(0).innerText(), /merge into main done .* via dashboard/);
    assert.match(await attempts.nth(1).innerText(), /apply refused \(target_dirty\).* via dashboard/);
    // nothing offered that cannot be done: main, the branch checked out, holds the work now
    await until('Apply disabled after the merge', async () => ((await page.getByRole('button', { name: 'Apply…' }).isDisabled()) ? true : undefined));
    assert.equal(await page.getByRole('button', { name: 'Apply…' }).getAttribute('title'), "the branch checked out, main, holds this run's work already: there is nothing to apply");
    await screenshot(page, f, 'merged');

    // re-run the greet run: a new run with the same inputs, linked to the old one
    await page.goto(`${s.base}/#/runs/${encodeURIComponent(runId)}`);
    await page.getByRole('button', { name: 'Re-run' }).click();
    await page.waitForURL((u) => u.hash.startsWith('#/runs/') && !u.hash.endsWith(runId));
    const again = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    await page.locator('#log').getByText('hello delivery!').waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('#started-by').innerText(), `re-run of ${runId} (127.0.0.1)`, 'the run page says what started it');
    const rec = (await (await fetch(`${s.base}/api/runs/${again}`)).json()) as { inputs: Record<string, string>; startedBy: { via: string; rerunOf: string } };
    assert.deepEqual(rec.inputs, { who: 'delivery', punctuation: '!' });
    assert.deepEqual([rec.startedBy.via, rec.startedBy.rerunOf], ['rerun', runId]);
    await page.getByRole('link', { name: '← all runs' }).click();
    await page.locator(`#runs tr[data-run="${again}"] td.started-by`).getByText(`re-run of ${runId}`).waitFor();
    assert.deepEqual(problems, [], 'the page threw no errors');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

/** A screenshot, checked, also kept as page-NAME.png in $RUNNER_PAGE_SHOTS when set (the run page's, for the note). */
async function pageShot(page: Page, f: Fixture, name: string): Promise<void> {
  const png = await screenshot(page, f, name);
  const shots = process.env.RUNNER_PAGE_SHOTS;
  if (!shots) return;
  await mkdir(shots, { recursive: true });
  await writeFile(path.join(shots, `page-${name}.png`), png);
}

/** How often `text` occurs in `hay`. */
function occurrences(hay: string, text: string): number {
  return hay.split(text).length - 1;
}

test('the run page lists the whole plan from the start, each log line once, what the running step does; the recent runs by project', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const other = await fixture();
  const plan = `version: 1
name: plan
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
inputs:
  files: { default: '["a.txt","b.txt"]' }
steps:
  - id: prepare
    run: echo "prepared <i>once</i>"
  - id: work
    run: |
      echo "working <b>hard</b>"
      ${HOLD_UNTIL_RELEASED}
      echo done > out.txt
  - id: lint
    for_each: \${{ inputs.files }}
    run: echo "lint $RUNNER_ITEM"
  - id: verify
    verify: true
    run: echo verified
`;
  const elsewhere = `version: 1\nname: elsewhere\nproject: { path: ${other.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: hello\n    run: echo hello from the other project\n`;
  const s = await serveFolder(f, { 'plan.yaml': plan, 'elsewhere.yaml': elsewhere }, '127.0.0.1:0');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  const shot = (name: string) => pageShot(page, f, name);
  try {
    // a run of the other project first: the recent runs then hold two projects
    await page.goto(s.base);
    await page.locator('#pipelines tr[data-pipeline="elsewhere"]').getByRole('button', { name: 'Run now' }).click();
    await page.waitForURL(/#\/runs\//);
    const otherId = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 60_000 });

    await page.goto(s.base);
    await page.locator('#pipelines tr[data-pipeline="plan"]').getByRole('button', { name: 'Run now' }).click();
    await page.getByRole('button', { name: 'Start run' }).click(); // its input's default taken
    await page.waitForURL((u) => u.hash.startsWith('#/runs/') && !u.hash.endsWith(otherId));
    const runId = decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
    // from the start, before any step ran, every step of the file is listed
    const names = () => page.locator('#steps tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-step')));
    await until('the plan listed', async () => ((await names()).length >= 4 ? true : undefined));
    assert.deepEqual((await names()).slice(-2), ['lint', 'verify'], 'the steps not started yet are listed, in the file\'s order');
    assert.match(await page.locator('#steps tr[data-step="lint"]').innerText(), /one run per item of \$\{\{ inputs\.files \}\}/, 'a for_each step is one row until its instances exist');
    assert.match(await page.locator('#steps tr[data-step="verify"]').innerText(), /verify/);

    // while work runs: verify is pending, the bar says what the step does, each line is on the page once
    await page.locator('#log').getByText('working <b>hard</b>').waitFor({ timeout: 60_000 });
    await until('work running in the table', async () => ((await page.locator('#steps tr[data-step="work"] .badge').innerText()) === 'running' ? true : undefined));
    assert.deepEqual(await names(), ['prepare', 'work', 'lint', 'verify']);
    assert.equal(await page.locator('#steps tr[data-step="verify"] .badge').innerText(), 'pending');
    assert.equal(await page.locator('#steps tr[data-step="lint"] .badge').innerText(), 'pending');
    assert.equal(await page.locator('#steps tr[data-step="prepare"] .badge').innerText(), 'completed');
    const said = page.locator('#steps tr[data-step="work"] td.when');
    await until('the running step says what it does', async () => (/last line \(\d+s ago\): holding until released/.test(await said.innerText()) ? true : undefined));
    assert.match(await said.innerText(), /started \d\d:\d\d:\d\d, running \d+s/);
    assert.match(await page.locator('#steps tr[data-step="prepare"] td.when').innerText(), /\d\d:\d\d:\d\d → \d\d:\d\d:\d\d \(\d+s\)/, 'an ended step says when it ran and how long');
    assert.equal(await page.locator('pre.log').count(), 1, 'one log on the page');
    assert.equal(await page.locator('#log .line').getByText('prepared <i>once</i>').count(), 1);
    assert.equal(occurrences(await page.locator('#main').innerText(), 'prepared <i>once</i>'), 1, 'a line is on the page once');
    await shot('run-working');

    releaseStep(runId, 'work');
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 60_000 });
    await until('the instances listed', async () => ((await names()).includes('lint[1]') ? true : undefined));
    const after = await names();
    assert.deepEqual([...after.slice(0, 2), ...after.slice(2, 4).sort(), after[4]], ['prepare', 'work', 'lint[0]', 'lint[1]', 'verify'], "a for_each step's instances once they exist (in the order they ended)");
    assert.equal(await page.locator('#steps tr[data-step="verify"] .badge').innerText(), 'completed');
    await page.locator('#log').getByText('verified').waitFor();
    const text = await page.locator('#main').innerText();
    for (const line of ['prepared <i>once</i>', 'working <b>hard</b>', 'lint a.txt', 'lint b.txt', 'verified']) assert.equal(occurrences(text, line), 1, `"${line}" is on the page once`);
    assert.equal(await page.locator('#main i, #main b').count(), 0);
    // a step's lines alone, then all again
    await page.locator('#run-log button.log-step[data-step="lint[1]"]').click();
    assert.equal((await page.locator('#log').innerText()).trim(), 'lint b.txt');
    await page.locator('#run-log').getByRole('button', { name: /^All steps/ }).click();
    assert.match(await page.locator('#log').innerText(), /\[prepare\] prepared[\s\S]*\[verify\] verified/);
    await page.locator('#diff .diff-file[data-path="out.txt"]').waitFor();
    await shot('run-ended');

    // the recent runs: all projects, or one
    await page.getByRole('link', { name: '← all runs' }).click();
    await page.locator(`#runs tr[data-run="${runId}"]`).waitFor();
    const picker = page.locator('#project-filter');
    assert.equal(await picker.inputValue(), '', 'all projects at first');
    assert.equal(await page.locator(`#runs tr[data-run="${otherId}"] td.project`).innerText(), path.basename(other.project));
    await shot('front-all');
    await picker.selectOption(f.project);
    await until('only the project chosen', async () => ((await page.locator(`#runs tr[data-run="${otherId}"]`).count()) === 0 ? true : undefined));
    assert.equal(await page.locator(`#runs tr[data-run="${runId}"]`).count(), 1);
    assert.ok(page.url().endsWith(`#/?project=${encodeURIComponent(f.project)}`), 'the choice is in the address');
    await page.waitForTimeout(2500); // a redraw keeps the choice
    assert.equal(await page.locator(`#runs tr[data-run="${otherId}"]`).count(), 0);
    assert.equal(await picker.inputValue(), f.project);
    await shot('front');
    assert.deepEqual(problems, [], 'the page threw no errors');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

// 180 s: a loaded clean-clone CI run took past 60 s to start serve and Chromium's page here
test('a run waiting at an approval gate shows the gate: its prompt, since when, where its decision goes', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, { 'talk.yaml': `version: 1\nname: talk\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: talk\n    run: echo hi\n` }, '127.0.0.1:0');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  try {
    // the record a gate leaves (the approval steps' own), written here: the page shows what it says
    const runId = '20261127-100000-gatexx';
    const since = new Date(Date.now() - 300_000).toISOString();
    await mkdir(path.join(f.home, 'runs', runId), { recursive: true });
    const rec = {
      runId, pipeline: 'gated', pipelineFile: path.join(f.root, 'gone.yaml'), project: f.project, workspace: 'git_worktree', taskId: null, worktree: null,
      branch: `run/${runId}`, baseSha: null, headSha: null, status: 'awaiting_approval', startedAt: since, finishedAt: null, durationMs: null, pushed: false, push: null,
      keptWorkspace: false, pid: 1, current: null, recovery: null, deliveryRules: { verifySteps: [], paths: null }, delivered: null, hooks: [], error: null,
      steps: [{ id: 'plan', status: 'completed', exitCode: 0, oomKilled: false, timedOut: false, durationMs: 4000, startedAt: since, finishedAt: since, commit: 'abcdef1234567', outputs: {}, limits: [] }],
      gate: { id: 'approve-plan', name: 'approve-plan', prompt: 'Read PLAN.md on the run\'s branch; <b>approve</b> to implement it.', since, deadline: new Date(Date.now() + 48 * 3600_000).toISOString() },
    };
    await writeFile(path.join(f.home, 'runs', runId, 'run.json'), JSON.stringify(rec));
    await page.goto(`${s.base}/#/runs/${runId}`);
    const gate = page.locator('#steps tr.gate[data-step="approve-plan"]');
    await gate.waitFor();
    assert.equal(await gate.locator('.badge').innerText(), 'awaiting approval');
    assert.equal(await gate.locator('.gate-prompt').innerText(), "Read PLAN.md on the run's branch; <b>approve</b> to implement it.");
    assert.match(await gate.innerText(), /waiting since .*; it ends rejected \(timed out\) at /);
    assert.equal(await gate.locator('.gate-actions').count(), 1, 'the place for Approve and Reject');
    assert.match(await page.locator('.plan-note').innerText(), /gone\.yaml is gone/, 'the plan says it is the record\'s');
    await pageShot(page, f, 'gate');
    assert.equal(await page.locator('#main b').count(), 0);
    assert.deepEqual(problems, [], 'the page threw no errors');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});
