/**
 * What every bench shares: medians, timing, and its one result line, which
 * `make bench` (bench/all.ts) gathers into the table of bench/README.md.
 */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export interface BenchResult {
  bench: string;
  against: string;
  /** e.g. "<= 1.10" or ">= 0.7" */
  aim: string;
  /** the ratio to what it is against; or, with `unit`, a figure in that unit */
  ratio: number;
  unit?: string;
  /** figures behind the ratio, in words */
  detail: string;
}

const PREFIX = 'bench-result: ';

/** Prints the result line (and says whether the aim is met). */
export function report(r: BenchResult): void {
  console.log(`${r.bench}: ${r.unit ? `${r.ratio.toFixed(2)} ${r.unit}` : `ratio ${r.ratio.toFixed(3)}`} against ${r.against} (aim ${r.aim}: ${met(r) ? 'met' : 'NOT met'}); ${r.detail}`);
  console.log(`${PREFIX}${JSON.stringify(r)}`);
}

export function met(r: BenchResult): boolean {
  const [op, v] = r.aim.split(' ') as ['<=' | '>=', string];
  return op === '<=' ? r.ratio <= Number(v) : r.ratio >= Number(v);
}

/** The result lines in a bench's output. */
export function resultsIn(output: string): BenchResult[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith(PREFIX))
    .map((l) => JSON.parse(l.slice(PREFIX.length)) as BenchResult);
}
