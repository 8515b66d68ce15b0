// @ts-check
/** The pipelines table: next run, file errors, the last run that could not start, Run now (with a form for inputs). */
import { post } from '../lib/api.js';
import { el, fill, messageOf, setStatus } from '../lib/dom.js';
import { money, when } from '../lib/format.js';

/**
 * @typedef {{ description?: string, default?: string }} Input
 * @typedef {{ runId: string, at: string, error: string }} Failure
 * @typedef {{ spentUsd: number, budgetPerDayUsd: number | null }} Today
 * @typedef {{ name: string | null, file: string, nextRuns: string[], errors: string[], inputs: Record<string, Input>, lastFailure: Failure | null, today?: Today }} Pipeline
 */

/** The table, and the place above it where a pipeline's inputs are asked for. */
export function pipelinesTable() {
  const body = el('tbody');
  const form = el('div', { id: 'run-form' });
  const table = el('table', { id: 'pipelines' }, el('thead', {}, el('tr', {}, el('th', {}, 'Pipeline'), el('th', {}, 'Next run'), el('th', {}, 'Spent today'), el('th', {}, 'File'), el('th', {}))), body);
  /** @param {Array<Pipeline>} ps */
  const show = (ps) => {
    fill(body, ps.map((p) => row(p, form)));
    if (!ps.length) body.append(el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No pipeline files in the folder yet.')));
  };
  return { form, table, show };
}

/** @param {Pipeline} p @param {HTMLElement} form */
function row(p, form) {
  return el(
    'tr',
    { dataset: { pipeline: p.name ?? '' } },
    el('td', {}, p.name ?? el('span', { class: 'muted' }, '(does not load)')),
    el('td', {}, p.nextRuns.length ? when(p.nextRuns.slice().sort()[0] ?? '') : el('span', { class: 'muted' }, 'no schedule')),
    el('td', { class: 'today' }, today(p.today)),
    el(
      'td',
      {},
      el('code', {}, p.file),
      ...p.errors.map((e) => el('div', { class: 'error' }, e)),
      p.lastFailure &&
        el(
          'div',
          { class: 'error last-failure' },
          'Its last run did not start (',
          el('a', { href: `#/runs/${encodeURIComponent(p.lastFailure.runId)}` }, when(p.lastFailure.at)),
          `): ${p.lastFailure.error}`,
        ),
    ),
    el('td', {}, p.name ? el('button', { onclick: () => (Object.keys(p.inputs).length ? showRunForm(form, p) : trigger(p.name ?? '', {})) }, 'Run now') : ''),
  );
}

/**
 * The form for a pipeline's inputs, above the tables (which the polling redraws).
 * @param {HTMLElement} into @param {Pipeline} p
 */
function showRunForm(into, p) {
  const fields = Object.entries(p.inputs).map(([name, input]) => {
    // a task is often a paragraph: each input is a text box that grows, not a one-line field
    const field = /** @type {HTMLTextAreaElement} */ (el('textarea', { id: `input-${name}`, name, rows: '2' }));
    if (input.default !== undefined) field.value = input.default;
    else field.required = true;
    return { name, field, row: el('div', { class: 'field' }, el('label', { for: `input-${name}` }, name), field, input.description && el('small', { class: 'muted' }, input.description)) };
  });
  const submit = (/** @type {Event} */ e) => {
    e.preventDefault();
    into.replaceChildren();
    void trigger(p.name ?? '', Object.fromEntries(fields.map((f) => [f.name, f.field.value])));
  };
  into.replaceChildren(
    el(
      'form',
      { class: 'run-form', onsubmit: submit },
      el('h2', {}, `Run ${p.name}`),
      ...fields.map((f) => f.row),
      el('button', { type: 'submit' }, 'Start run'),
      ' ',
      el('button', { type: 'button', class: 'secondary', onclick: () => into.replaceChildren() }, 'Cancel'),
    ),
  );
  fields[0]?.field.focus();
}

/** @param {string} name @param {Record<string, string>} inputs */
async function trigger(name, inputs) {
  try {
    const r = await post(`/api/pipelines/${encodeURIComponent(name)}/runs`, { inputs });
    location.hash = `#/runs/${encodeURIComponent(r.runId)}`;
  } catch (err) {
    setStatus(`could not start ${name}: ${messageOf(err)}`);
  }
}

/**
 * Today's spend against the pipeline's budget_per_day: `$1.20 of $5.00`, a
 * bar filled that far (red at the budget); `$1.20` without a budget; — when
 * the server does not say.
 * @param {Today | undefined} t
 */
function today(t) {
  if (!t || typeof t.spentUsd !== 'number') return '—';
  if (typeof t.budgetPerDayUsd !== 'number') return el('span', { title: 'no budget_per_day' }, money(t.spentUsd));
  const share = t.budgetPerDayUsd > 0 ? t.spentUsd / t.budgetPerDayUsd : 1;
  const bar = el('span', { class: `fill${share >= 1 ? ' over' : ''}` });
  bar.style.width = `${Math.min(100, share * 100).toFixed(1)}%`;
  return el('div', {}, `${money(t.spentUsd)} of ${money(t.budgetPerDayUsd)}`, el('div', { class: 'budget', title: `${Math.round(share * 100)}% of budget_per_day` }, bar));
}
