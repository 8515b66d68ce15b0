/**
 * bench/dashboard-diff: the run page of a run whose step committed what a
 * virtualenv looks like (758 files, about 285,000 lines, 10.9 MB of patch:
 * test/fixtures/big-diff.ts), opened in Debian's Chromium through a real
 * `runner serve`. Prints, for each of a few page loads, the time to first
 * paint, to the diff's file list shown, and the page's JS heap (CDP
 * Performance.getMetrics, after a garbage collection); then the same for
 * opening the file of 20,000 lines with "Show anyway". Figures only, no aim:
 * the page used to die on this diff ("Maximum call stack size exceeded").
 *
 *   npm run build && node dist/bench/dashboard-diff.js [ROUNDS]
 */
import { chromium } from 'playwright-core';
import { BIG_DIFF, BIG_DIFF_STEP } from '../test/fixtures/big-diff.js';
import { IMAGE, makeProject, serveFolder, until } from '../test/fixtures/project.js';
import { median } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 3);
const FLAGS = ['--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const f = await makeProject({ remote: false });
const pipeline = `version: 1\nname: venv\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: install\n    run: ${JSON.stringify(BIG_DIFF_STEP)}\n`;
const s = await serveFolder(f, { 'venv.yaml': pipeline }, '127.0.0.1:0');
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, chromiumSandbox: false, args: FLAGS });
try {
  const { runId } = (await (await fetch(`${s.base}/api/pipelines/venv/runs`, { method: 'POST' })).json()) as { runId: string };
  await until('the run to end', async () => {
    const r = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { status: string };
    if (r.status === 'running' || r.status === 'queued' || r.status === 'starting') return undefined;
    if (r.status !== 'succeeded') throw new Error(`the run ${r.status}`);
    return r;
  }, 180_000);
  const t0 = performance.now();
  const list = (await (await fetch(`${s.base}/api/runs/${runId}/diff/files`)).json()) as { total: { files: number; added: number; removed: number; bytes: number } };
  const indexMs = performance.now() - t0;
  console.log(`run ${runId}: ${list.total.files} files, +${list.total.added} -${list.total.removed} lines, ${(list.total.bytes / 1e6).toFixed(1)} MB of patch; GET diff/files took ${indexMs.toFixed(0)} ms (the index, read once)`);

  const rows: Array<{ fcp: number; listed: number; heap: number; bigMs: number; bigHeap: number }> = [];
  for (let i = 0; i < ROUNDS; i++) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    let nodes = NaN;
    const heap = async () => {
      await cdp.send('HeapProfiler.collectGarbage');
      const { metrics } = await cdp.send('Performance.getMetrics');
      nodes = metrics.find((m) => m.name === 'Nodes')?.value ?? NaN;
      return (metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? NaN) / 1e6;
    };
    await page.goto(`${s.base}/#/runs/${runId}`);
    await page.locator('#diff .diff-file').first().waitFor({ timeout: 60_000 });
    const listed = await page.evaluate(() => performance.now());
    const fcp = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN);
    const listHeap = await heap();
    const listNodes = nodes;
    await page.locator('#diff .diff-filter').fill('big_table');
    const big = page.locator(`#diff .diff-file[data-path="${BIG_DIFF.bigFile}"]`);
    await big.locator('button.diff-file-head').click();
    const b0 = await page.evaluate(() => performance.now());
    await big.getByRole('button', { name: 'Show anyway' }).click();
    await big.locator('tbody tr').nth(20_000).waitFor({ timeout: 60_000 });
    const bigMs = (await page.evaluate(() => performance.now())) - b0;
    const bigHeap = await heap();
    if (errors.length) throw new Error(`the page threw: ${errors.join('; ')}`);
    rows.push({ fcp, listed, heap: listHeap, bigMs, bigHeap });
    console.log(
      `load ${i + 1}: first paint ${fcp.toFixed(0)} ms, file list shown ${listed.toFixed(0)} ms, JS heap ${listHeap.toFixed(1)} MB, ${listNodes} DOM nodes; ` +
        `the 20,000-line file drawn in ${bigMs.toFixed(0)} ms, JS heap then ${bigHeap.toFixed(1)} MB, ${nodes} DOM nodes`,
    );
    await page.close();
  }
  const m = (k: keyof (typeof rows)[number]) => median(rows.map((r) => r[k])).toFixed(k.endsWith('eap') ? 1 : 0);
  console.log(`medians of ${ROUNDS}: first paint ${m('fcp')} ms, file list ${m('listed')} ms, heap ${m('heap')} MB; big file ${m('bigMs')} ms, heap ${m('bigHeap')} MB`);
} finally {
  await browser.close();
  s.child.kill('SIGTERM');
  await s.exited;
  await f.cleanup();
}
