/** A plain text table: columns padded to their widest cell, the last one not. */
export function printTable(rows: string[][], out: { write(s: string): unknown } = process.stdout): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  for (const r of rows) out.write(`${r.map((c, i) => (i < r.length - 1 ? c.padEnd(widths[i]!) : c)).join('  ')}\n`);
}
