/**
 * A person deciding at the dashboard, in a real browser (Debian's Chromium,
 * headless, driven by playwright-core) against a real `runner serve`: a gated
 * pipeline's run waits at its gate, the page shows the gate and offers Approve
 * and Reject (never Merge or Apply while it waits); an approval with a comment
 * lets the run go on, and the next step reads the comment; a rejection ends
 * the run; a failed run is resumed once what failed it is fixed; a fork from
 * a step is a new run the page moves to. Screenshots of each state are checked
 * (and kept as page-gate-*.png in $RUNNER_PAGE_SHOTS when set).
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { git, HOLD_UNTIL_RELEASED, IMAGE, projectsForThisFile, releaseStep, serveFolder, until, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const CHROMIUM = '/usr/bin/chromium';
// Chromium on a closed network: no background calls home, no GPU, no sandbox (root in CI).
const FLAGS = ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const COMMENT = 'Looks right. Keep <b>it</b> small; "quotes" and $HOME stay as typed.';

let browser: Browser;
before(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false, args: FLAGS }).catch((err: Error) => {
    throw new Error(`cannot start ${CHROMIUM} (make browser installs Debian's chromium): ${err.message}`);
  });
});
after(async () => browser?.close());

/** A screenshot, checked: a PNG of the viewport's size with more than a blank page; kept as page-gate-NAME.png in $RUNNER_PAGE_SHOTS when set. */
async function shot(page: Page, f: Fixture, name: string): Promise<void> {
  const file = path.join(f.root, `gate-${name}.png`);
  await page.screenshot({ path: file });
  const png = await readFile(file);
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG', `${file} is a PNG`);
  assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [1280, 800], `${file} has the viewport's size`);
  assert.ok(png.length > 15_000, `${file} holds a rendered page (${png.length} bytes), not a blank one`);
  const keep = process.env.RUNNER_PAGE_SHOTS;
  if (keep) {
    await mkdir(keep, { recursive: true });
    await writeFile(path.join(keep, `page-gate-${name}.png`), png);
  }
}

/** The run id in the page's address (#/runs/ID). */
function runOf(page: Page): string {
  return decodeURIComponent(new URL(page.url()).hash.slice('#/runs/'.length));
}

async function record(base: string, runId: string): Promise<any> {
  const res = await fetch(`${base}/api/runs/${encodeURIComponent(runId)}`);
  assert.equal(res.status, 200, `GET /api/runs/${runId}`);
  return res.json();
}

/** The labels of the run page's action buttons, in order. */
function buttons(page: Page): Promise<string[]> {
  return page.locator('#delivery .actions button').evaluateAll((bs) => bs.map((b) => (b.textContent ?? '').trim()));
}

/** Clicks Run now on pipeline `name` of the front page and resolves with the new run's id, once its page is shown. */
async function runNow(page: Page, base: string, name: string, not: string[] = []): Promise<string> {
  await page.goto(base);
  await page.locator(`#pipelines tr[data-pipeline="${name}"]`).getByRole('button', { name: 'Run now' }).click();
  await page.waitForURL((u) => /^#\/runs\/\d{8}-\d{6}-[a-z0-9]+$/.test(u.hash) && !not.some((id) => u.hash.endsWith(id)));
  return runOf(page);
}

function gatedPipeline(f: Fixture): string {
  return `version: 1
name: gated
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
steps:
  - id: plan
    run: |
      echo "plan: write hello.txt" > PLAN.md
      ${HOLD_UNTIL_RELEASED}
  - id: approve-plan
    approval:
      prompt: Read PLAN.md on the run's branch; approve to implement it.
      timeout: 1h
  - id: implement
    run: |
      printf '%s' "$RUNNER_APPROVAL_COMMENT" > comment.txt
      echo hello > hello.txt
      echo "implemented after the gate"
`;
}

test('a gate decided at the page: the gate shown, Approve with a comment the next step reads, a merge after; Reject ends a run', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, { 'gated.yaml': gatedPipeline(f) }, '127.0.0.1:0');
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  try {
    const runId = await runNow(page, s.base, 'gated');
    // while plan works: the whole plan is listed, the gate and the step after it pending
    const names = () => page.locator('#steps tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-step')));
    await until('plan running', async () => ((await page.locator('#steps tr[data-step="plan"] .badge').innerText()) === 'running' ? true : undefined), 60_000);
    await page.locator('#log').getByText('holding until released').waitFor({ timeout: 30_000 });
    assert.deepEqual(await names(), ['plan', 'approve-plan', 'implement']);
    assert.equal(await page.locator('#steps tr[data-step="approve-plan"] .badge').innerText(), 'pending');
    assert.match(await page.locator('#steps tr[data-step="approve-plan"]').innerText(), /approval gate[\s\S]*Read PLAN\.md on the run's branch[\s\S]*waits at most 1h 0m, then the run ends rejected/, 'the gate says what it will ask before it asks, and for how long');
    assert.deepEqual(await buttons(page), ['Cancel run'], 'a working run offers nothing but its cancel');
    await shot(page, f, 'working');

    // at the gate: its row with its prompt; Approve and Reject; no Merge, no Apply
    releaseStep(runId, 'plan');
    await page.locator('.run-head .badge.awaiting_approval').waitFor({ timeout: 60_000 });
    const gate = page.locator('#steps tr.gate[data-step="approve-plan"]');
    assert.equal(await gate.locator('.badge').innerText(), 'awaiting approval');
    assert.equal(await gate.locator('.gate-prompt').innerText(), "Read PLAN.md on the run's branch; approve to implement it.");
    assert.match(await gate.innerText(), /waiting since .*; it ends rejected \(timed out\) at /);
    await page.locator('#diff .diff-file[data-path="PLAN.md"]').waitFor({ timeout: 30_000 }); // the change so far, to read before deciding
    await until('the gate\'s buttons', async () => ((await buttons(page)).includes('Approve…') ? true : undefined));
    assert.deepEqual(await buttons(page), ['Approve…', 'Reject…'], 'at a gate, the decision alone: no Merge, no Apply, no Re-run');
    assert.equal(await page.locator('.run-head').getByText('Duration').count(), 0, 'a run at a gate has no duration yet');
    assert.equal(await page.locator('#steps tr[data-step="approve-plan"] button.step-name').count(), 0, 'a gate prints nothing: its name opens no log');
    assert.equal(await page.locator('#steps tr[data-step="implement"] .badge').innerText(), 'pending');
    await shot(page, f, 'waiting');

    // Approve…: the dialog says what the gate asks, what it costs, what approving runs; the comment typed
    await page.getByRole('button', { name: 'Approve…' }).first().click();
    const dialog = page.locator('dialog.confirm');
    await dialog.waitFor();
    const said = await dialog.innerText();
    assert.match(said, /Read PLAN\.md on the run's branch; approve to implement it\./, 'the dialog shows the prompt');
    assert.match(said, /Cost so far: /);
    assert.match(said, /Approving runs implement/, 'the dialog says what approving runs');
    await dialog.locator('#gate-comment').fill(COMMENT);
    await shot(page, f, 'approve-dialog');
    await dialog.getByRole('button', { name: 'Approve', exact: true }).click();

    // the run goes on and succeeds; the next step wrote the comment on the run's branch
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 90_000 });
    assert.equal(git(f.project, 'show', `run/${runId}:comment.txt`), COMMENT, 'the step after the gate read the comment as typed');
    const rec = await record(s.base, runId);
    assert.equal(rec.decisions?.length, 1, JSON.stringify(rec.decisions));
    const d = rec.decisions[0];
    assert.deepEqual([d.step, d.decision, d.by?.via, d.comment], ['approve-plan', 'approved', 'dashboard', COMMENT]);
    const decided = gate.locator('.gate-decision');
    await decided.waitFor();
    assert.match(await decided.innerText(), /^approved by .*\(dashboard\)/);
    assert.equal(await decided.locator('.gate-comment').innerText(), COMMENT, 'the comment shown as text');
    assert.equal(await page.locator('#main b').count(), 0, 'no element made from the comment');
    assert.equal(await page.locator('#steps tr[data-step="implement"] .badge').innerText(), 'completed');
    await page.locator('#diff .diff-file[data-path="hello.txt"]').waitFor({ timeout: 30_000 });
    // the log follows the run again after the gate, each line once
    await page.locator('#log .line[data-step="implement"]').getByText('implemented after the gate').waitFor({ timeout: 30_000 });
    assert.equal(await page.locator('#log .line').getByText('holding until released').count(), 1, 'the lines before the gate are not shown twice');
    await shot(page, f, 'approved');

    // delivered: Merge… into main, then Merge and Apply say why they are no more
    await page.getByRole('button', { name: 'Merge…' }).click();
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Merge into main' }).click();
    await page.locator('#delivery .action-result .ok').getByText(/^Merged into main/).waitFor({ timeout: 30_000 });
    assert.equal(git(f.project, 'show', 'main:hello.txt'), 'hello');
    await until('Merge and Apply disabled', async () => ((await page.getByRole('button', { name: 'Merge…' }).isDisabled()) && (await page.getByRole('button', { name: 'Apply…' }).isDisabled()) ? true : undefined));
    assert.match(await page.locator('#delivery .why').innerText(), /main/, 'the page says why');
    await shot(page, f, 'merged');

    // a second run: Reject… ends it rejected, its work kept
    const second = await runNow(page, s.base, 'gated', [runId]);
    await page.locator('#log').getByText('holding until released').waitFor({ timeout: 60_000 });
    releaseStep(second, 'plan');
    await page.locator('.run-head .badge.awaiting_approval').waitFor({ timeout: 60_000 });
    await until('Reject offered', async () => ((await buttons(page)).includes('Reject…') ? true : undefined));
    await page.getByRole('button', { name: 'Reject…' }).first().click();
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /Rejecting ends the run rejected/);
    await dialog.locator('#gate-comment').fill('not this plan');
    await dialog.getByRole('button', { name: 'Reject', exact: true }).click();
    await page.locator('.run-head .badge.rejected').waitFor({ timeout: 30_000 });
    const rejected = await record(s.base, second);
    assert.equal(rejected.status, 'rejected');
    assert.deepEqual([rejected.decisions[0].decision, rejected.decisions[0].by.via, rejected.decisions[0].comment], ['rejected', 'dashboard', 'not this plan']);
    assert.equal(git(f.project, 'show', `run/${second}:PLAN.md`), 'plan: write hello.txt', 'its work kept on its branch');
    assert.equal(await page.locator('#steps tr[data-step="implement"] .badge').innerText(), 'not run');
    await until('no gate buttons once decided', async () => (!(await buttons(page)).some((b) => /^(Approve|Reject)/.test(b)) ? true : undefined));
    await page.locator('#steps tr[data-step="approve-plan"] .gate-decision.rejected').waitFor();
    await shot(page, f, 'rejected');

    // the front page: the runs and what they came to
    await page.getByRole('link', { name: '← all runs' }).click();
    await page.locator(`#runs tr[data-run="${second}"]`).getByText('rejected').waitFor();
    await page.locator(`#runs tr[data-run="${runId}"]`).getByText('succeeded').waitFor();
    await shot(page, f, 'front');
    assert.deepEqual(problems, [], 'the page threw no errors');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('a failed run resumed from the page once what failed it is fixed; a fork from a step is a new run the page moves to', { timeout: 240_000 }, async () => {
  const f = await fixture();
  // the check step fails while the secret says it is not ready; the secrets file is read as each run (and resume) starts
  const secrets = path.join(f.root, 'secrets.env');
  await writeFile(secrets, 'DESK_READY=no\n');
  await chmod(secrets, 0o600);
  const flaky = `version: 1
name: flaky
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
secrets: [DESK_READY]
steps:
  - id: build
    run: date +%s%N > built.txt
  - id: check
    secrets: [DESK_READY]
    run: |
      echo "ready: $DESK_READY"
      test "$DESK_READY" = yes
      echo checked > checked.txt
  - id: ship
    run: echo shipped > shipped.txt
`;
  const s = await serveFolder(f, { 'flaky.yaml': flaky }, '127.0.0.1:0', { args: ['--secrets-file', secrets], env: { DESK_READY: '' } });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  try {
    const runId = await runNow(page, s.base, 'flaky');
    await page.locator('.run-head .badge.failed').waitFor({ timeout: 90_000 });
    assert.equal(await page.locator('#steps tr[data-step="ship"] .badge').innerText(), 'skipped');
    await until('Resume offered', async () => ((await buttons(page)).includes('Resume…') ? true : undefined));
    const built = git(f.project, 'show', `run/${runId}:built.txt`);
    await shot(page, f, 'failed');

    // fixed outside the run; Resume… goes on from check, build not run again
    await writeFile(secrets, 'DESK_READY=yes\n');
    await page.getByRole('button', { name: 'Resume…' }).click();
    const dialog = page.locator('dialog.confirm');
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /goes on from its first step that did not complete/);
    await dialog.getByRole('button', { name: 'Resume', exact: true }).click();
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 90_000 });
    // the log follows the resumed run: the new attempt's lines, the old ones once
    await page.locator('#log .line[data-step="check~2"]').getByText('ready: yes').waitFor({ timeout: 30_000 });
    assert.equal(await page.locator('#log .line').getByText('ready: no').count(), 1);
    assert.equal(git(f.project, 'show', `run/${runId}:shipped.txt`), 'shipped');
    assert.equal(git(f.project, 'show', `run/${runId}:built.txt`), built, 'build was not run again');
    const rec = await record(s.base, runId);
    assert.equal(rec.steps.filter((x: { id: string }) => x.id === 'build').length, 1, 'build ran once');
    assert.deepEqual(rec.steps.filter((x: { id: string }) => x.id === 'check').map((x: { status: string }) => x.status), ['failed', 'completed'], 'the failed attempt of check stays on record');
    assert.equal(rec.attempts?.length, 2, JSON.stringify(rec.attempts));
    assert.equal(rec.attempts[1].by?.via, 'dashboard');
    await shot(page, f, 'resumed');

    // Fork… from check: a new run, the page moves to it; its branch has build's work as it was
    await until('Fork offered', async () => ((await buttons(page)).includes('Fork…') ? true : undefined));
    await page.getByRole('button', { name: 'Fork…' }).click();
    await dialog.waitFor();
    await dialog.locator('#fork-from').selectOption('check');
    await shot(page, f, 'fork-dialog');
    await dialog.getByRole('button', { name: 'Fork', exact: true }).click();
    await page.waitForURL((u) => u.hash.startsWith('#/runs/') && !u.hash.endsWith(runId));
    const forked = runOf(page);
    await page.locator('.run-head .badge.succeeded').waitFor({ timeout: 90_000 });
    const frec = await record(s.base, forked);
    assert.deepEqual([frec.forkOf?.runId, frec.forkOf?.step], [runId, 'check']);
    assert.equal(git(f.project, 'show', `run/${forked}:built.txt`), built, "the fork starts from the old run's build, not a new one");
    assert.equal(git(f.project, 'show', `run/${forked}:shipped.txt`), 'shipped');
    assert.equal(frec.steps.filter((x: { id: string; carried?: boolean }) => x.id === 'build' && !x.carried).length, 0, 'build was not run in the fork');
    assert.equal(await page.locator('#fork-of').innerText(), `${runId} from step check (its branch began at ${String(frec.forkOf.commit).slice(0, 10)})`, 'the page says whose fork it is');
    assert.equal(await page.locator('#steps tr[data-step="build"] .note.carried').innerText(), `carried from ${runId}`, 'a carried step says it did not run here');
    await shot(page, f, 'forked');
    assert.deepEqual(problems, [], 'the page threw no errors');
  } finally {
    await page.close();
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});
