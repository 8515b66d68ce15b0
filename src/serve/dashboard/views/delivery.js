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
import { money, when } from '../lib/format.js';
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
  /** the run's status when delivery was asked */
  let askedAt = '';

  /** What a done or refused action says. @param {string} text @param {boolean} ok @param {string[]} [details] */
  const say = (text, ok, details = []) =>
    fill(result, [el('div', { class: ok ? 'ok' : 'error' }, text), details.length > 0 && el('ul', { class: 'details' }, ...details.map((d) => el('li', {}, d)))]);
  /** @param {unknown} err @param {string} what */
  const refused = (err, what) => say(`${what}: ${plain(messageOf(err))}`, false, err instanceof ApiError ? err.details : []);

  const ask = () =>
    (asking ??= (async () => {
      const at = askedAt;
      /** @type {Delivery | null} */
      let answer;
      try {
        answer = await api(runUrl(runId, '/delivery'));
      } catch {
        answer = null; // a server without the route: no merge or apply from here
      }
      if (at === askedAt) delivery = answer; // else the run moved on meanwhile: asked again
      asking = undefined;
    })());

  const merge = async () => {
    await ask();
    // the run's status moved while the page asked (its answer was dropped as stale): ask once more, for now
    if (delivery === undefined) await ask();
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
    // the run's status moved while the page asked (its answer was dropped as stale): ask once more, for now
    if (delivery === undefined) await ask();
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

  /**
   * Approve or Reject the gate the run waits at: the dialog shows what the gate asks, the cost so far, what a
   * decision will do (the steps it runs, or that the run ends), and takes a comment the next steps read.
   * @param {any} r @param {'approve' | 'reject'} what
   */
  const decide = async (r, what) => {
    const g = r.gate ?? {};
    const comment = /** @type {HTMLTextAreaElement} */ (el('textarea', { id: 'gate-comment', rows: 4, placeholder: 'What the next steps should know ($RUNNER_APPROVAL_COMMENT)' }));
    const next = (r.plan?.steps ?? []).filter((/** @type {any} */ s) => s.state === 'pending').map((/** @type {any} */ s) => s.id);
    const spent = spentSoFar(r);
    const yes = await dialog(
      what === 'approve' ? `Approve ${g.name ?? 'the gate'}` : `Reject ${g.name ?? 'the gate'}`,
      [
        el('p', { class: 'gate-prompt' }, g.prompt ?? ''),
        el('p', { class: 'note' }, `Cost so far: ${spent}. `, what === 'approve' ? `Approving runs ${next.length ? next.join(', ') : 'the steps after the gate'} (on branch ${r.branch ?? 'its branch'}), which may cost more.` : 'Rejecting ends the run rejected; its work so far stays on its branch.'),
        el('div', { class: 'field' }, el('label', { for: 'gate-comment' }, 'Comment'), comment),
      ],
      el('button', { type: 'submit', value: 'yes', class: what === 'reject' ? 'danger' : '' }, what === 'approve' ? 'Approve' : 'Reject'),
    );
    if (!yes) return;
    try {
      const d = await post(runUrl(runId, `/${what}`), { comment: comment.value });
      say(what === 'approve' ? `Approved: ${d.goesOn === 'waiting_exec' ? 'the run goes on in the runner exec that waits for it' : 'the run goes on'}.` : 'Rejected: the run ended rejected, its work kept on its branch.', true);
    } catch (err) {
      refused(err, what === 'approve' ? 'Not approved' : 'Not rejected');
    }
    lastKey = '';
    refresh();
  };

  /** Resume: go on from the first step that did not complete. @param {any} r */
  const resume = async (r) => {
    const yes = await dialog(
      'Resume this run',
      [el('p', { class: 'note' }, `Run ${runId} goes on from its first step that did not complete, on branch ${r.branch ?? 'its branch'}. The steps it completed are not run again (nor paid for again); its budget counts the ${spentSoFar(r)} it spent.`)],
      el('button', { type: 'submit', value: 'yes' }, 'Resume'),
    );
    if (!yes) return;
    try {
      await post(runUrl(runId, '/resume'), {});
      say('Resumed: the run goes on.', true);
    } catch (err) {
      refused(err, 'Not resumed');
    }
    lastKey = '';
    refresh();
  };

  /** Fork: a new run from a step of this one. @param {any} r */
  const fork = async (r) => {
    const ids = [...new Set((r.steps ?? []).filter((/** @type {any} */ s) => s.status !== 'skipped' && !s.approval).map((/** @type {any} */ s) => s.id))];
    const select = /** @type {HTMLSelectElement} */ (el('select', { id: 'fork-from' }, ...ids.map((id) => el('option', { value: id }, id))));
    const yes = await dialog(
      'Fork this run',
      [
        el('div', { class: 'field' }, el('label', { for: 'fork-from' }, 'From step'), select),
        el('p', { class: 'note' }, 'A new run begins where this one was just before that step, with the outputs of the steps before it, and runs that step and what follows with the pipeline file as it is now. Both runs stay.'),
      ],
      el('button', { type: 'submit', value: 'yes' }, 'Fork'),
    );
    if (!yes) return;
    try {
      const d = await post(runUrl(runId, '/fork'), { from: select.value });
      location.hash = `#/runs/${encodeURIComponent(d.runId)}`;
    } catch (err) {
      refused(err, 'Not forked');
    }
  };

  /** Redrawn from each poll of the record. @param {any} r */
  const update = (r) => {
    const live = r.status === 'running' || r.status === 'queued' || r.status === 'starting';
    const waits = r.status === 'awaiting_approval' && r.gate;
    // a run at a gate has not ended: it is decided, not delivered (Merge and Apply come once it ends)
    const ended = !live && !waits && r.status !== 'not_started';
    const gitRun = r.workspace !== 'persistent_directory' && Boolean(r.branch);
    // what the server said about delivering holds for the status it was asked at: a run approved at its gate, or resumed, asks again when it ends
    if (r.status !== askedAt) {
      askedAt = r.status;
      delivery = undefined;
    }
    if (ended && gitRun && delivery === undefined) void ask().then(() => (lastKey = '', update(r)));
    const d = delivery;
    const key = JSON.stringify([r.status, r.gate && r.gate.name, gitRun, d && d.deliverable, d && d.why, d && d.mergeWhy, d && d.applyWhy, r.delivered, r.deliveries]);
    if (key === lastKey) return; // redrawn only when it changed: a dialog's button must not move under the pointer
    lastKey = key;
    const refusedWhy = d && !d.deliverable ? (d.why ?? 'the server says this run cannot be delivered') : undefined;
    const resumable = ['failed', 'interrupted', 'canceled', 'error'].includes(r.status) && r.workspace !== 'task_worktree';
    fill(buttons, [
      waits && el('button', { onclick: () => decide(r, 'approve') }, 'Approve…'),
      waits && el('button', { class: 'danger', onclick: () => decide(r, 'reject') }, 'Reject…'),
      resumable && el('button', { onclick: () => resume(r) }, 'Resume…'),
      ended && gitRun && r.workspace === 'git_worktree' && el('button', { class: 'secondary', onclick: () => fork(r) }, 'Fork…'),
      live && el('button', { class: 'danger', onclick: cancel }, 'Cancel run'),
      // nothing offered that cannot be done: after a merge into every branch, or into the one checked out, say so instead
      ended && gitRun && el('button', { onclick: merge, disabled: Boolean(refusedWhy ?? d?.mergeWhy), title: refusedWhy ?? d?.mergeWhy }, 'Merge…'),
      ended && gitRun && el('button', { class: 'secondary', onclick: apply, disabled: Boolean(refusedWhy ?? d?.applyWhy), title: refusedWhy ?? d?.applyWhy }, 'Apply…'),
      !live && !waits && r.pipelineFile !== undefined && el('button', { class: 'secondary', onclick: rerun }, 'Re-run'),
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

/** What the run's own steps cost so far (a fork's carried steps were paid by the run they came from). @param {any} r */
function spentSoFar(r) {
  let usd = 0;
  let known = false;
  for (const s of r.steps ?? []) {
    if (s.carried || !s.usage || typeof s.usage.costUsd !== 'number') continue;
    usd += s.usage.costUsd;
    known = true;
  }
  return known ? money(usd) : 'nothing metered';
}
