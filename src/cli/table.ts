/** A plain text table: columns padded to their widest cell, the last one not. Cells show their control characters (visible.ts). */
import { visible } from '../common/visible.js';

export function printTable(rows: string[][], out: { write(s: string): unknown } = process.stdout): void {
  const shown = rows.map((r) => r.map(visible));
  const widths = shown[0]!.map((_, i) => Math.max(...shown.map((r) => (r[i] ?? '').length)));
  for (const r of shown) out.write(`${r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c)).join('  ')}\n`);
}
