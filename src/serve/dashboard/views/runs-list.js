// @ts-check
/** The recent runs table. */
import { badge, el, fill } from '../lib/dom.js';
import { duration, when } from '../lib/format.js';

export function runsTable() {
  const body = el('tbody');
  const table = el(
    'table',
    { id: 'runs' },
    el('thead', {}, el('tr', {}, el('th', {}, 'Run'), el('th', {}, 'Pipeline'), el('th', {}, 'Status'), el('th', {}, 'Started'), el('th', {}, 'Duration'))),
    body,
  );
  /** @param {Array<any>} rs */
  const show = (rs) => {
    fill(body, rs.map(row));
    if (!rs.length) body.append(el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No runs yet.')));
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
    el('td', {}, r.status === 'running' ? duration(Date.now() - new Date(r.startedAt).getTime()) : duration(r.durationMs)),
  );
}
