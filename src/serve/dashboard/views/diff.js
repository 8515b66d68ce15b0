// @ts-check
/** The run's change: its diff, or for a persistent directory what each step added, modified and deleted. */
import { api, runUrl } from '../lib/api.js';
import { el } from '../lib/dom.js';
import { resultName } from './steps.js';

/**
 * A persistent directory's run has no diff: what each step added, modified and deleted.
 * @param {Array<any>} steps @param {HTMLElement} into
 */
export function showChanges(steps, into) {
  into.classList.remove('muted');
  /** @type {Array<HTMLElement>} */
  const rows = [];
  for (const s of steps) {
    const c = s.changes;
    if (!c) continue;
    const counts = c.cut ?? { added: c.added.length, modified: c.modified.length, deleted: c.deleted.length };
    rows.push(el('span', { class: 'hunk' }, `${resultName(s)}: ${counts.added} added, ${counts.modified} modified, ${counts.deleted} deleted\n`));
    for (const [kind, mark, cls] of /** @type {const} */ ([['added', '+', 'add'], ['modified', '~', ''], ['deleted', '-', 'del']])) {
      for (const ch of c[kind]) rows.push(el('span', { class: cls }, `${mark} ${ch.path}${ch.type === 'dir' ? '/' : ''}\n`));
    }
    if (c.cut) rows.push(el('span', { class: 'muted' }, `… the whole list is in the run's ${c.cut.file}\n`));
  }
  into.replaceChildren(...(rows.length ? rows : [el('span', {}, '(no change)')]));
}

/** @param {string} runId @param {HTMLElement} into */
export async function showDiff(runId, into) {
  try {
    /** @type {string} */
    const text = await api(runUrl(runId, "/diff"));
    into.classList.remove('muted');
    into.replaceChildren(
      ...(text || '(no change)').split('\n').map((l) => {
        const kind = l.startsWith('+++') || l.startsWith('---') ? 'file' : l.startsWith('+') ? 'add' : l.startsWith('-') ? 'del' : l.startsWith('@@') ? 'hunk' : '';
        return el('span', { class: kind }, `${l}\n`);
      }),
    );
  } catch (err) {
    into.textContent = err instanceof Error ? err.message : String(err);
  }
}

