/** A persistent directory step's changes as lines for the console (runs show, runner diff). Pure. */
import { changeCounts, type ChangeList } from '../workspace/snapshot.js';

export function changeLines(stepId: string, c: ChangeList, indent = ''): string[] {
  const n = changeCounts(c);
  const lines = [`${indent}${stepId}: ${n.added} added, ${n.modified} modified, ${n.deleted} deleted`];
  for (const [kind, mark] of [['added', '+'], ['modified', '~'], ['deleted', '-']] as const) {
    for (const ch of c[kind]) lines.push(`${indent}  ${mark} ${ch.path}${ch.type === 'dir' ? '/' : ch.type === 'symlink' ? ` -> ${ch.target ?? ''}` : ''}`);
  }
  if (c.cut) lines.push(`${indent}  … ${n.added + n.modified + n.deleted - (c.added.length + c.modified.length + c.deleted.length)} more in ${c.cut.file}`);
  return lines;
}
