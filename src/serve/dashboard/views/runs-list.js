// @ts-check
/**
 * The recent runs table: each run's project, what it cost and what started it;
 * a selector above it shows one project's runs alone (all, unless chosen: the
 * choice is in the address, `#/?project=PATH`, so a link keeps it).
 */
import { badge, el, fill } from '../lib/dom.js';
import { count, duration, money, when } from '../lib/format.js';

/** At most this many runs are listed, of the project chosen or of all. */
const SHOWN = 50;

/** The project the address chooses, or '' for all. */
function chosenProject() {
  const q = location.hash.indexOf('?');
  return q < 0 ? '' : (new URLSearchParams(location.hash.slice(q + 1)).get('project') ?? '');
}

/** The last part of a project's path, as its name. @param {string} p */
function projectName(p) {
  return p.replace(/\/+$/, '').split('/').pop() || p;
}

export function runsTable() {
  const body = el('tbody');
  const select = /** @type {HTMLSelectElement} */ (el('select', { id: 'project-filter', 'aria-label': 'Project' }));
  const picker = el('label', { class: 'project-picker' }, 'Project ', select);
  /** @type {Array<any>} */
  let last = [];
  const table = el(
    'table',
    { id: 'runs' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        el('th', {}, 'Run'),
        el('th', {}, 'Project'),
        el('th', {}, 'Pipeline'),
        el('th', {}, 'Status'),
        el('th', {}, 'Started'),
        el('th', {}, 'Started by'),
        el('th', {}, 'Duration'),
        el('th', { class: 'num' }, 'Cost'),
      ),
    ),
    body,
  );
  /** @param {Array<any>} rs */
  const show = (rs) => {
    last = rs;
    const chosen = chosenProject();
    // the projects of the runs read, by name, each with how many of them it has; the chosen one even when none of them is its
    const counts = new Map();
    for (const r of rs) if (typeof r.project === 'string' && r.project) counts.set(r.project, (counts.get(r.project) ?? 0) + 1);
    if (chosen && !counts.has(chosen)) counts.set(chosen, 0);
    const projects = [...counts.keys()].sort((a, b) => projectName(a).localeCompare(projectName(b)) || a.localeCompare(b));
    fill(select, [
      el('option', { value: '' }, `All projects (${rs.length})`),
      ...projects.map((p) => el('option', { value: p, title: p }, `${projectName(p)} (${counts.get(p)})${projects.some((q) => q !== p && projectName(q) === projectName(p)) ? ` ${p}` : ''}`)),
    ]);
    select.value = chosen;
    const mine = (chosen ? rs.filter((r) => r.project === chosen) : rs).slice(0, SHOWN);
    fill(body, mine.map(row));
    if (!mine.length) body.append(el('tr', {}, el('td', { colspan: 8, class: 'muted' }, chosen ? `No recent runs of ${chosen}.` : 'No runs yet.')));
  };
  select.addEventListener('change', () => {
    history.replaceState(null, '', select.value ? `#/?project=${encodeURIComponent(select.value)}` : '#/');
    show(last);
  });
  return { table, picker, show };
}

/** @param {any} r */
function row(r) {
  return el(
    'tr',
    { dataset: { run: r.runId, project: typeof r.project === 'string' ? r.project : '' } },
    el('td', {}, el('a', { href: `#/runs/${encodeURIComponent(r.runId)}` }, r.runId)),
    el('td', { class: 'project', title: typeof r.project === 'string' ? r.project : undefined }, typeof r.project === 'string' ? projectName(r.project) : ''),
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
