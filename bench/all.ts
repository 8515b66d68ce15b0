/**
 * `make bench`: every bench in turn (each compares the runner against the
 * plain tools doing the same work, interleaved in one run), its output shown
 * as it goes, then the table of results that bench/README.md keeps.
 *
 *   node dist/bench/all.js [NAME...]
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { met, resultsIn, type BenchResult } from './report.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BENCHES = ['overhead', 'workspace', 'concurrency', 'logs', 'agent-start', 'gateway-latency', 'inspection', 'runs-ls', 'swarm', 'cache', 'gvisor'];
const chosen = process.argv.length > 2 ? process.argv.slice(2) : BENCHES;

function runBench(name: string): Promise<{ output: string; code: number | null }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [path.join(HERE, `${name}.js`)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    c.stdout.on('data', (b: Buffer) => {
      output += b.toString();
      process.stdout.write(b);
    });
    c.on('close', (code) => resolve({ output, code }));
  });
}

const results: BenchResult[] = [];
const failed: string[] = [];
for (const name of chosen) {
  console.log(`\n== bench/${name}`);
  const r = await runBench(name);
  results.push(...resultsIn(r.output));
  if (r.code !== 0) failed.push(name);
}
const cell = (r: BenchResult) => (r.unit ? `${r.ratio.toFixed(2)} ${r.unit}` : r.ratio.toFixed(2));
console.log(`\nOn ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'cpu'}), ${Math.round(os.totalmem() / 1024 ** 3)} GiB, ${new Date().toISOString().slice(0, 10)}:\n`);
console.log('| bench | against | aim | measured | met | figures |');
console.log('|---|---|---|---|---|---|');
for (const r of results) console.log(`| ${r.bench} | ${r.against} | ${r.aim} | ${cell(r)} | ${met(r) ? 'yes' : '**no**'} | ${r.detail} |`);
if (failed.length) {
  console.log(`\nfailed: ${failed.join(', ')}`);
  process.exitCode = 1;
}
