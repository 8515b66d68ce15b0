// @ts-check
/**
 * The run's change. A diff is listed file by file (GET .../diff/files: a
 * step that committed a virtualenv changes hundreds of files and ten
 * megabytes), a page of files at a time; a file's patch is fetched when it
 * is opened, parsed by diff2html's parser and drawn as text in diff2html's
 * table (its style sheet, /assets/diff2html.css), never as its HTML. A file
 * too long to draw says so and draws on request. A persistent directory has
 * no diff: what each step added, modified and deleted.
 */
import { parse } from 'diff2html/lib-esm/diff-parser.js';
import { api, runUrl } from '../lib/api.js';
import { visibleLines } from '../../../common/visible.js';
import { append, el, fill, messageOf } from '../lib/dom.js';
import { bytes, count } from '../lib/format.js';
import { resultName } from './steps.js';

/** Files listed at once; more on request. */
const PAGE = 100;
/** A file with more changed lines than this, or a bigger part of the patch, is drawn only on request. */
const TOO_LONG = 5000;
const TOO_BIG = 1024 * 1024;
/** A line is drawn up to this many characters (a minified bundle is one line of megabytes); the raw patch has the rest. */
const LINE_SHOWN = 5000;
/** Rows a table holds: a long file is drawn as tables one under the other, and the browser lays out only those in view (content-visibility in style.css). */
const CHUNK = 400;
/** A change this small opens its files at once. */
const SMALL = { files: 5, lines: 2000 };

/**
 * @typedef {{ path: string, oldPath?: string, status: 'added' | 'deleted' | 'modified' | 'renamed', added: number, removed: number, binary: boolean, bytes: number }} DiffFile
 * @typedef {{ files: DiffFile[], total: { files: number, added: number, removed: number, bytes: number } }} DiffFiles
 */

/** @param {string} runId @param {HTMLElement} into */
export async function showDiff(runId, into) {
  /** @type {DiffFiles} */
  let list;
  try {
    list = await api(runUrl(runId, '/diff/files'));
  } catch (err) {
    fill(into, [messageOf(err)]);
    return;
  }
  into.classList.remove('muted');
  const { files, total } = list;
  if (!files.length) {
    fill(into, [el('p', { class: 'muted' }, '(no change)')]);
    return;
  }
  const rows = el('div', { class: 'diff-files' });
  const more = el('div', { class: 'diff-more' });
  const filter = /** @type {HTMLInputElement} */ (el('input', { type: 'search', class: 'diff-filter', placeholder: 'Filter files by path', 'aria-label': 'Filter files by path' }));
  const small = total.files <= SMALL.files && total.added + total.removed <= SMALL.lines;
  let shown = 0;
  /** @type {DiffFile[]} */
  let matching = files;
  const showMore = () => {
    const next = matching.slice(shown, shown + PAGE);
    const frag = document.createDocumentFragment();
    for (const f of next) frag.appendChild(fileRow(runId, f, small));
    rows.appendChild(frag);
    shown += next.length;
    const left = matching.length - shown;
    fill(more, [left > 0 && el('button', { type: 'button', class: 'secondary', onclick: showMore }, `Show ${Math.min(PAGE, left)} more (${left} not shown)`)]);
  };
  filter.addEventListener('input', () => {
    const q = filter.value.trim().toLowerCase();
    matching = q ? files.filter((f) => f.path.toLowerCase().includes(q) || (f.oldPath ?? '').toLowerCase().includes(q)) : files;
    rows.replaceChildren();
    shown = 0;
    showMore();
  });
  fill(into, [
    el(
      'div',
      { class: 'diff-summary' },
      el('strong', { class: 'diff-total' }, `${total.files.toLocaleString('en')} file${total.files === 1 ? '' : 's'} changed`),
      ' ',
      el('span', { class: 'add' }, `+${total.added.toLocaleString('en')}`),
      ' ',
      el('span', { class: total.removed ? 'del' : 'zero' }, `−${total.removed.toLocaleString('en')}`),
      ' ',
      el('span', { class: 'muted' }, `${bytes(total.bytes)} of patch ·`),
      ' ',
      el('a', { href: runUrl(runId, '/diff'), download: `${runId}.patch` }, 'whole patch'),
      total.files > 10 && filter,
    ),
    rows,
    more,
  ]);
  showMore();
}

/** One file: its line in the list, opened on click to show its patch, closed on another. @param {string} runId @param {DiffFile} f @param {boolean} open */
function fileRow(runId, f, open) {
  const body = el('div', { class: 'diff-body', hidden: true });
  const toggle = el(
    'button',
    { type: 'button', class: 'diff-file-head', 'aria-expanded': 'false' },
    el('span', { class: `diff-status ${f.status}`, title: f.status }, f.status.slice(0, 1).toUpperCase()),
    el('span', { class: 'diff-path' }, f.oldPath ? `${f.oldPath} → ${f.path}` : f.path),
    f.binary ? el('span', { class: 'diff-counts muted' }, 'binary') : el('span', { class: 'diff-counts' }, el('span', { class: f.added ? 'add' : 'zero' }, `+${count(f.added)}`), ' ', el('span', { class: f.removed ? 'del' : 'zero' }, `−${count(f.removed)}`)),
  );
  const row = el('div', { class: 'diff-file', dataset: { path: f.path } }, toggle, body);
  const setOpen = (/** @type {boolean} */ yes) => {
    toggle.setAttribute('aria-expanded', String(yes));
    row.classList.toggle('open', yes);
    body.hidden = !yes;
    if (!yes) body.replaceChildren(); // a closed file holds no rows
    else void openFile(runId, f, body);
  };
  toggle.addEventListener('click', () => setOpen(body.hidden));
  if (open) setOpen(true);
  return row;
}

/** @param {string} runId @param {DiffFile} f @param {HTMLElement} body */
async function openFile(runId, f, body) {
  const raw = runUrl(runId, `/diff?file=${encodeURIComponent(f.path)}`);
  const rawLink = el('a', { href: raw, download: `${f.path.split('/').pop() ?? 'file'}.patch` }, 'raw patch');
  if (f.binary) {
    fill(body, [el('p', { class: 'diff-notice' }, 'A binary file: its content is not shown (', rawLink, ').')]);
    return;
  }
  const lines = f.added + f.removed;
  if (lines > TOO_LONG || f.bytes > TOO_BIG) {
    fill(body, [
      el(
        'p',
        { class: 'diff-notice' },
        `This file changes ${lines.toLocaleString('en')} line${lines === 1 ? '' : 's'} (${bytes(f.bytes)}): too much to draw at once. `,
        el('button', { type: 'button', class: 'secondary', onclick: () => void draw(raw, body) }, 'Show anyway'),
        ' or get the ',
        rawLink,
        '.',
      ),
    ]);
    return;
  }
  await draw(raw, body);
}

/** Fetches a file's patch and draws it. @param {string} url @param {HTMLElement} body */
async function draw(url, body) {
  fill(body, [el('p', { class: 'muted diff-notice' }, 'Loading…')]);
  try {
    /** @type {string} */
    const text = await api(url);
    if (body.hidden) return; // closed while it loaded
    fill(body, [fileTable(text)]);
  } catch (err) {
    fill(body, [el('p', { class: 'error diff-notice' }, messageOf(err))]);
  }
}

/**
 * A file's patch as diff2html draws it line by line, made of text nodes:
 * a row per hunk header, a row per line with its old and new numbers.
 *
 * Before diff2html reads it, every control character is made visible but the
 * newline: diff2html splits lines at a carriage return too, so a line of
 * content `x\rdiff --git a/y b/y` would start a file of its own and hide the
 * lines after it. A path's part can hold more than one file (a file that
 * became a symlink is a deletion and an addition of one path): all are drawn.
 * @param {string} patch
 */
function fileTable(patch) {
  const files = parse(visibleLines(patch.replace(/\r\n/g, '\n')));
  const wrapper = el('div', { class: 'd2h-code-wrapper' });
  /** @type {HTMLElement | undefined} */
  let tbody;
  let rows = 0;
  /** @param {HTMLElement} tr */
  const add = (tr) => {
    if (!tbody || rows++ % CHUNK === 0) wrapper.appendChild(el('div', { class: 'd2h-chunk' }, el('table', { class: 'd2h-diff-table' }, (tbody = el('tbody', { class: 'd2h-diff-tbody' })))));
    tbody.appendChild(tr);
  };
  /** @param {string} text */
  const info = (text) => add(el('tr', {}, el('td', { class: 'd2h-code-linenumber d2h-info' }), el('td', { class: 'd2h-info' }, el('div', { class: 'd2h-code-line' }, text))));
  if (files.length === 0) info('No lines changed (its mode or name only).');
  for (const parsed of files) {
    const mode = modeNote(parsed);
    if (files.length > 1 || mode) info([parsed.isDeleted ? 'deleted' : parsed.isNew ? 'added' : 'changed', mode].filter(Boolean).join(', '));
    if (parsed.blocks.length === 0 && files.length > 1) info('No lines changed.');
    for (const block of parsed.blocks) {
      info(block.header);
      for (const line of block.lines) {
        const kind = line.type === 'insert' ? 'd2h-ins' : line.type === 'delete' ? 'd2h-del' : 'd2h-cntx';
        const rest = line.content.slice(1);
        const cut = rest.length > LINE_SHOWN;
        add(
          el(
            'tr',
            {},
            el(
              'td',
              { class: `d2h-code-linenumber ${kind}` },
              el('div', { class: 'line-num1' }, line.oldNumber === undefined ? '' : String(line.oldNumber)),
              el('div', { class: 'line-num2' }, line.newNumber === undefined ? '' : String(line.newNumber)),
            ),
            el(
              'td',
              { class: kind },
              el(
                'div',
                { class: 'd2h-code-line' },
                el('span', { class: 'd2h-code-line-prefix' }, line.content.slice(0, 1) || ' '),
                el('span', { class: 'd2h-code-line-ctn' }, cut ? rest.slice(0, LINE_SHOWN) : rest),
                cut && el('span', { class: 'muted line-cut' }, ` … ${(rest.length - LINE_SHOWN).toLocaleString('en')} more characters on this line (raw patch)`),
              ),
            ),
          ),
        );
      }
    }
  }
  if (rows > CHUNK) wrapper.classList.add('chunked');
  return el('div', { class: 'd2h-wrapper d2h-light-color-scheme' }, el('div', { class: 'd2h-file-wrapper' }, el('div', { class: 'd2h-file-diff' }, wrapper)));
}

const MODES = /** @type {Record<string, string>} */ ({ '120000': 'a symbolic link', '160000': 'a submodule', '100755': 'executable' });

/** What a file's mode lines say, in words: a symlink is a reviewer's business (its content is where it points). @param {any} f */
function modeNote(f) {
  const parts = [];
  if (f.oldMode && f.newMode && f.oldMode !== f.newMode) parts.push(`mode ${f.oldMode} → ${f.newMode}`);
  const mode = f.newFileMode ?? f.deletedFileMode ?? f.newMode ?? f.mode;
  if (typeof mode === 'string' && MODES[mode]) parts.push(MODES[mode]);
  return parts.join(', ');
}

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
  fill(into, [append(el('pre', { class: 'diff' }), rows.length ? rows : ['(no change)'])]);
}

