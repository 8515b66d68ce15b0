// @ts-check
/** The recent runs table: what each cost and what started it. */
import { badge, el, fill } from '../lib/dom.js';
import { count, duration, money, when } from '../lib/format.js';

export function runsTable() {
  const body = el('tbody');
  const table = el(
    'table',
    { id: 'runs' },
    el(
      'thead',
      {},
      el('tr', {}, el('th', {}, 'Run'), el('th', {}, 'Pipeline'), el('th', {}, 'Status'), el('th', {}, 'Started'), el('th', {}, 'Started by'), el('th', {}, 'Duration'), el('th', { class: 'num' }, 'Cost')),
    ),
    body,
  );
  /** @param {Array<any>} rs */
  const show = (rs) => {
    fill(body, rs.map(row));
    if (!rs.length) body.append(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, 'No runs yet.')));
  };
  return { table, show };
}

/** @param {any} r */
function row(r) {
  return el(
    'tr',
    { dataset: { run: r.runId } },
    el('td', {}, el('a', { href: `#/runs/${encodeURIComponent(r.runId)}` }, r.runId)),
    el('td', {}, r.pipeline ?? ''),
    el('td', {}, badge(r.status)),
    el('td', {}, r.startedAt ? when(r.startedAt) : ''),
    el('td', { class: 'started-by' }, startedBy(r)),
    el('td', {}, r.status === 'running' ? duration(Date.now() - new Date(r.startedAt).getTime()) : duration(r.durationMs)),
    el('td', { class: 'num cost', title: r.tokens ? `${r.tokens.input.toLocaleString('en')} tokens in, ${r.tokens.output.toLocaleString('en')} out` : undefined }, cost(r)),
  );
}

/** `$0.042 · 37.8k tokens`, or — for a run without an agent step (or from a server that does not say). @param {any} r */
function cost(r) {
  if (typeof r.costUsd !== 'number' && !r.tokens) return '—';
  const tokens = r.tokens ? ` · ${count(r.tokens.input + r.tokens.output)} tokens` : '';
  return `${typeof r.costUsd === 'number' ? money(r.costUsd) : '—'}${tokens}`;
}

/**
 * What started a run: its schedule, the API, the dashboard, the CLI, or a
 * re-run of another (linked); older records say only requestedBy.
 * @param {any} r @returns {Node | string}
 */
export function startedBy(r) {
  const s = r.startedBy;
  if (!s || typeof s !== 'object') return typeof r.requestedBy === 'string' ? r.requestedBy : '—';
  const from = typeof s.from === 'string' && s.from ? ` (${s.from})` : '';
  if (s.via === 'rerun' && typeof s.rerunOf === 'string') return el('span', {}, 're-run of ', el('a', { href: `#/runs/${encodeURIComponent(s.rerunOf)}` }, s.rerunOf), from);
  if (s.via === 'schedule' && typeof s.schedule === 'string') return `schedule ${s.schedule}`;
  return `${String(s.via ?? '—')}${from}`;
}
