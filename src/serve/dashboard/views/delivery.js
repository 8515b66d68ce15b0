// @ts-check
/**
 * The run page's actions: Merge its branch into one of the project's, Apply
 * its change to the project's working tree, Re-run it with the same inputs,
 * Cancel it while it runs. What changes the project first asks, in a dialog
 * that names the project and the branch; a refusal (409 with its code and
 * details) is shown as its message; a result is shown, and the record
 * redrawn. Past deliveries (the record's `deliveries`) are listed.
 */
import { api, ApiError, post, runUrl } from '../lib/api.js';
import { el, fill, messageOf, setStatus } from '../lib/dom.js';
import { when } from '../lib/format.js';
import { onLeave } from '../lib/poll.js';

/**
 * @typedef {{ project: string, branch: string, currentBranch: string | null, branches: string[], mergedInto?: string[], deliverable: boolean, why?: string, checkoutDirty?: boolean, mergeWhy?: string, applyWhy?: string }} Delivery
 * @typedef {{ action: 'merge' | 'apply', at: string, by?: { via?: string, user?: string, from?: string }, into?: string, squash?: boolean, commit?: string, ok: boolean, refused?: string, message?: string }} Attempt
 */

/** @param {string} runId @param {() => void} refresh what redraws the record */
export function actions(runId, refresh) {
  const buttons = el('div', { class: 'actions' });
  const result = el('div', { class: 'action-result', role: 'status' });
  const history = el('div', { class: 'deliveries' });
  const node = el('div', { id: 'delivery' }, buttons, result, history);
  /** @type {Delivery | null | undefined} undefined: not asked yet; null: the server cannot say */
  let delivery;
  /** @type {Promise<void> | undefined} the question in flight: a click while the page asks waits for its answer */
  let asking;
  let lastKey = '';

  /** What a done or refused action says. @param {string} text @param {boolean} ok @param {string[]} [details] */
  const say = (text, ok, details = []) =>
    fill(result, [el('div', { class: ok ? 'ok' : 'error' }, text), details.length > 0 && el('ul', { class: 'details' }, ...details.map((d) => el('li', {}, d)))]);
  /** @param {unknown} err @param {string} what */
  const refused = (err, what) => say(`${what}: ${plain(messageOf(err))}`, false, err instanceof ApiError ? err.details : []);

  const ask = () =>
    (asking ??= (async () => {
      try {
        delivery = await api(runUrl(runId, '/delivery'));
      } catch {
        delivery = null; // a server without the route: no merge or apply from here
      }
      asking = undefined;
    })());

  const merge = async () => {
    await ask();
    if (!delivery) return say('This server cannot deliver runs (no GET /api/runs/:id/delivery).', false);
    const d = delivery;
    const select = /** @type {HTMLSelectElement} */ (el('select', { id: 'merge-into', name: 'into' }, ...d.branches.map((b) => el('option', { value: b }, b))));
    if (d.currentBranch && d.branches.includes(d.currentBranch)) select.value = d.currentBranch;
    const squash = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox', id: 'merge-squash', name: 'squash' }));
    const what = el('p', { class: 'what' });
    const confirm = el('button', { type: 'submit', value: 'yes' });
    const describe = () => {
      const dirty = d.checkoutDirty && select.value === d.currentBranch;
      fill(what, [
        'This merges ',
        el('code', {}, d.branch),
        ' into branch ',
        el('code', {}, select.value),
        ' of the project ',
        el('code', {}, d.project),
        squash.checked ? ', as one commit.' : '.',
        dirty && el('div', { class: 'warn' }, `The project's checkout of ${select.value} has uncommitted changes: the server will refuse to merge into it.`),
        (d.mergedInto ?? []).includes(select.value) && el('div', { class: 'warn' }, `${select.value} already holds this run's work: there is nothing to merge into it.`),
      ]);
      fill(confirm, [`Merge into ${select.value}`]);
    };
    select.addEventListener('change', describe);
    squash.addEventListener('change', describe);
    describe();
    const yes = await dialog('Merge this run', [
      el('div', { class: 'field' }, el('label', { for: 'merge-into' }, 'Into branch'), select),
      el('div', { class: 'field check' }, el('label', { for: 'merge-squash' }, squash, ' Squash into one commit')),
      what,
    ], confirm);
    if (!yes) return;
    const into = select.value;
    try {
      const r = await post(runUrl(runId, '/merge'), { into, squash: squash.checked });
      say(`Merged into ${r.into ?? into} as ${String(r.commit ?? '').slice(0, 10)}${r.squash ? ' (squashed)' : ''}${r.movedCheckout ? `; the checkout of ${r.into ?? into} was moved to it` : ''}${r.author ? `; committed as ${r.author.name} <${r.author.email}>${r.author.configured ? '' : ' (the project has no git identity of its own)'}` : ''}.`, true);
    } catch (err) {
      refused(err, `Not merged into ${into}`);
    }
    delivery = undefined;
    refresh();
  };

  const apply = async () => {
    await ask();
    if (!delivery) return say('This server cannot deliver runs (no GET /api/runs/:id/delivery).', false);
    const d = delivery;
    const yes = await dialog(
      'Apply this run',
      [
        el(
          'p',
          { class: 'what' },
          'This applies the change of ',
          el('code', {}, d.branch),
          ' to the working tree of the project ',
          el('code', {}, d.project),
          ...(d.currentBranch ? [' (on branch ', el('code', {}, d.currentBranch), ')'] : []),
          ', uncommitted.',
        ),
        d.checkoutDirty === true && el('p', { class: 'warn' }, "The project's checkout has uncommitted changes: the server will refuse to apply onto them."),
      ],
      el('button', { type: 'submit', value: 'yes' }, `Apply to ${d.project}`),
    );
    if (!yes) return;
    try {
      const r = await post(runUrl(runId, '/apply'), {});
      const files = Array.isArray(r.files) ? r.files : [];
      say(`Applied to ${r.project ?? d.project}: ${files.length} file${files.length === 1 ? '' : 's'} changed.`, true, files.slice(0, 20).concat(files.length > 20 ? [`… and ${files.length - 20} more`] : []));
    } catch (err) {
      refused(err, 'Not applied');
    }
    delivery = undefined;
    refresh();
  };

  const rerun = async () => {
    try {
      const r = await post(runUrl(runId, '/rerun'), {});
      location.hash = `#/runs/${encodeURIComponent(r.runId)}`;
    } catch (err) {
      refused(err, 'Not re-run');
    }
  };

  const cancel = async () => {
    const sure = await dialog(
      'Cancel this run',
      [el('p', { class: 'note' }, `Run ${runId} stops: its running steps are stopped, and what they and the steps before them did stays committed on its branch. A canceled run is not resumed; it can be run again.`)],
      el('button', { type: 'submit', value: 'yes', class: 'danger' }, 'Cancel the run'),
    );
    if (!sure) return;
    try {
      await post(runUrl(runId, '/cancel'));
      setStatus('canceling…');
      refresh();
    } catch (err) {
      refused(err, 'Not canceled');
    }
  };

  /** Redrawn from each poll of the record. @param {any} r */
  const update = (r) => {
    const live = r.status === 'running' || r.status === 'queued' || r.status === 'starting';
    const ended = !live && r.status !== 'not_started';
    const gitRun = r.workspace !== 'persistent_directory' && Boolean(r.branch);
    if (ended && gitRun && delivery === undefined) void ask().then(() => (lastKey = '', update(r)));
    const d = delivery;
    const key = JSON.stringify([r.status, gitRun, d && d.deliverable, d && d.why, d && d.mergeWhy, d && d.applyWhy, r.delivered, r.deliveries]);
    if (key === lastKey) return; // redrawn only when it changed: a dialog's button must not move under the pointer
    lastKey = key;
    const refusedWhy = d && !d.deliverable ? (d.why ?? 'the server says this run cannot be delivered') : undefined;
    fill(buttons, [
      live && el('button', { class: 'danger', onclick: cancel }, 'Cancel run'),
      // nothing offered that cannot be done: after a merge into every branch, or into the one checked out, say so instead
      ended && gitRun && el('button', { onclick: merge, disabled: Boolean(refusedWhy ?? d?.mergeWhy), title: refusedWhy ?? d?.mergeWhy }, 'Merge…'),
      ended && gitRun && el('button', { class: 'secondary', onclick: apply, disabled: Boolean(refusedWhy ?? d?.applyWhy), title: refusedWhy ?? d?.applyWhy }, 'Apply…'),
      !live && r.pipelineFile !== undefined && el('button', { class: 'secondary', onclick: rerun }, 'Re-run'),
      ended && gitRun && (refusedWhy ?? d?.applyWhy ?? d?.mergeWhy) && el('span', { class: 'muted why' }, refusedWhy ?? [d?.mergeWhy, d?.applyWhy].filter(Boolean).join('; ')),
    ]);
    fill(history, [deliveries(r)]);
  };
  return { node, update };
}

/** The record's delivery attempts, newest first; else what `delivered` says. @param {any} r */
function deliveries(r) {
  /** @type {Attempt[]} */
  const list = Array.isArray(r.deliveries) ? r.deliveries : [];
  if (!list.length) {
    const d = r.delivered;
    return d ? el('p', { class: 'muted' }, `Delivered by ${d.how}${d.into ? ` into ${d.into}` : ''}${d.commit ? ` (${String(d.commit).slice(0, 10)})` : ''}, `, when(d.at), '.') : null;
  }
  return el(
    'ul',
    { class: 'attempts' },
    ...list
      .slice()
      .reverse()
      .map((a) =>
        el(
          'li',
          { class: a.ok ? 'ok' : 'refused' },
          when(a.at),
          `: ${a.action}${a.into ? ` into ${a.into}` : ''}${a.squash ? ' (squash)' : ''} `,
          a.ok ? `done${a.commit ? ` (${a.commit.slice(0, 10)})` : ''}` : `${a.refused ? `refused (${a.refused})` : 'failed'}${a.message ? `: ${plain(a.message)}` : ''}`,
          a.by ? el('span', { class: 'muted' }, ` · via ${a.by.via ?? '?'}${a.by.user ? `, ${a.by.user}` : ''}${a.by.from ? `, from ${a.by.from}` : ''}`) : '',
        ),
      ),
  );
}

/** A refusal's message without the `refused (code): ` it starts with, which the page says its own way. @param {string} m */
function plain(m) {
  return m.replace(/^refused \([a-z_]+\): /, '');
}

/**
 * A modal dialog built from elements (its text set as text): resolves true
 * when its confirm button is pressed, false when it is closed otherwise or
 * its view is left.
 * @param {string} title @param {Array<Node | string | false | null>} body @param {HTMLElement} confirm
 * @returns {Promise<boolean>}
 */
function dialog(title, body, confirm) {
  const form = el('form', { method: 'dialog' }, el('h2', {}, title), ...body, el('div', { class: 'buttons' }, confirm, ' ', el('button', { type: 'submit', value: 'no', class: 'secondary' }, 'Cancel')));
  const d = /** @type {HTMLDialogElement} */ (el('dialog', { class: 'confirm' }, form));
  document.body.appendChild(d);
  return new Promise((resolve) => {
    d.addEventListener('close', () => {
      resolve(d.returnValue === 'yes');
      d.remove();
    });
    d.showModal();
    // A dialog outlives its view otherwise (it hangs on the body): after Back, it would ask about this run over another's page.
    onLeave(() => d.open && d.close('no'));
  });
}
