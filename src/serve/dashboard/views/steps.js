// @ts-check
/**
 * The run page's steps table and flow section: each run of a step (attempts,
 * retries, items, lanes), the steps it ran at once with, a bar placing it in
 * the run's time; the routes the flow took and what stopped it.
 */
import { badge, el } from '../lib/dom.js';
import { count, duration, money } from '../lib/format.js';

/** The name a step's run goes by (`implement#2`, `build[0]`), or its id. @param {{ id: string, name?: string | null }} s */
export function resultName(s) {
  return s.name ?? s.id;
}

/**
 * Every run of a step in the record's order (route visits and retries each
 * their own entry), then, while the run runs, those running now that have no
 * entry yet: from `running`, or `current` in the records of older runners.
 * @param {any} r @returns {Array<any>}
 */
export function stepRuns(r) {
  const now = Date.now();
  /** @type {Array<any>} */
  const list = (r.steps ?? []).map((/** @type {any} */ s) => ({ ...s, name: resultName(s) }));
  /** @type {Array<{ id: string, name?: string, startedAt: string }>} */
  const running = r.status !== 'running' ? [] : Array.isArray(r.running) ? r.running : r.current ? [r.current] : [];
  for (const x of running) {
    const name = resultName(x);
    if (list.some((s) => s.name === name)) continue;
    list.push({ id: x.id, name, status: 'running', exitCode: null, startedAt: x.startedAt, durationMs: now - new Date(x.startedAt).getTime(), commit: null });
  }
  return list;
}

/** A run's name without its attempt: `build[1]#2` → `build[1]`. @param {string} name */
function baseName(name) {
  return name.replace(/#\d+$/, '');
}

/**
 * When a step's run started and ended (ms), or null for one that never ran
 * or whose record has no times (older runners).
 * @param {any} s @returns {{ start: number, end: number } | null}
 */
function span(s) {
  if (s.status === 'skipped' || !s.startedAt) return null;
  const start = new Date(s.startedAt).getTime();
  if (!Number.isFinite(start)) return null;
  const end = s.finishedAt ? new Date(s.finishedAt).getTime() : start + (Number(s.durationMs) || 0);
  return { start, end: Number.isFinite(end) && end > start ? end : start };
}

/**
 * The steps table's rows: each run of a step by its name, what the flow did
 * with it (attempt, retry, item, lane and its merge), the steps it ran at
 * once with, and a bar placing it in the run's time.
 * @param {any} r @param {boolean} live
 */
export function stepRows(r, live) {
  const list = stepRuns(r);
  const spans = list.map(span);
  const known = /** @type {Array<{ start: number, end: number }>} */ (spans.filter((x) => x !== null));
  const runStart = new Date(r.startedAt).getTime();
  const runEnd = r.finishedAt ? new Date(r.finishedAt).getTime() : live ? Date.now() : NaN;
  const t0 = Math.min(...known.map((x) => x.start), ...(Number.isFinite(runStart) ? [runStart] : []));
  const t1 = Math.max(...known.map((x) => x.end), ...(Number.isFinite(runEnd) ? [runEnd] : []));
  const total = Math.max(t1 - t0, 1);
  return list.map((s, i) => {
    const here = spans[i];
    const together = here ? list.filter((_, j) => j !== i && spans[j] && /** @type {any} */ (spans[j]).start < here.end && here.start < /** @type {any} */ (spans[j]).end).map((x) => x.name) : [];
    /** @type {Array<HTMLElement>} */
    const notes = [];
    if (s.attempt > 1) notes.push(el('span', { class: 'note attempt' }, `attempt ${s.attempt}`));
    if (s.item) notes.push(el('span', { class: 'note item' }, `item ${s.item.index}: ${s.item.value}`));
    if (typeof s.retryInMs === 'number') {
      // the next attempt is a later run of the same name but its #N (`build[1]`, `build[1]#2`)
      const again = list.slice(i + 1).some((x) => baseName(x.name) === baseName(s.name));
      const after = duration(s.retryInMs);
      notes.push(el('span', { class: 'note retry' }, again ? `retried after ${after}` : live ? `runs again after ${after}` : `was to run again after ${after}`));
    }
    if (s.lane) notes.push(laneNote(s.lane));
    if (together.length) notes.push(el('span', { class: 'note together' }, `ran with: ${together.join(', ')}`));
    if (s.node) notes.push(el('span', { class: 'note node' }, `on node ${s.node}`));
    if (s.isolation === 'gvisor') notes.push(el('span', { class: 'note isolation', title: 'its container ran under gVisor, a kernel of its own (docs/gvisor.md)' }, 'under gVisor'));
    if (s.egress && s.egress.refused.length) {
      notes.push(el('span', { class: 'note egress', title: 'hosts its gateway refused it' }, `egress refused: ${s.egress.refused.slice(0, 5).map((/** @type {{ host: string, count: number }} */ r) => `${r.host} ×${r.count}`).join(', ')}${s.egress.refused.length > 5 || s.egress.others ? ', …' : ''}`));
    }
    if (s.egress && s.egress.rules && s.egress.rules.length) {
      notes.push(el('span', { class: 'note egress', title: 'requests its egress rules refused, by rule' }, `rules refused: ${s.egress.rules.slice(0, 3).map((/** @type {{ rule: string, count: number }} */ r) => `${r.rule} ×${r.count}`).join(', ')}${s.egress.rules.length > 3 ? ', …' : ''}`));
    }
    if (s.egress && s.egress.secrets && s.egress.secrets.length) {
      notes.push(el('span', { class: 'note egress', title: 'requests its gateway stopped for carrying a secret (named, never its value)' }, `secrets stopped: ${s.egress.secrets.slice(0, 5).map((/** @type {{ secret: string, count: number }} */ r) => `${r.secret} ×${r.count}`).join(', ')}${s.egress.secrets.length > 5 ? ', …' : ''}`));
    }
    /** @type {HTMLElement | string} */
    let bar = '';
    if (here && known.length) {
      const b = el('span', { class: `bar ${s.status}` });
      b.style.left = `${(((here.start - t0) / total) * 100).toFixed(2)}%`;
      b.style.width = `${(((here.end - here.start) / total) * 100).toFixed(2)}%`;
      bar = el('div', { class: 'timeline', title: `from ${duration(here.start - t0)} to ${duration(here.end - t0)} into the run` }, b);
    }
    return el(
      'tr',
      { dataset: { step: s.name, id: s.id } },
      el('td', {}, s.name, notes.length > 0 && el('div', { class: 'notes' }, ...notes.flatMap((n, k) => (k ? [' · ', n] : [n])))),
      el('td', {}, badge(s.status)),
      el('td', {}, s.exitCode === null || s.exitCode === undefined ? '' : String(s.exitCode)),
      el('td', {}, duration(s.durationMs)),
      el('td', {}, s.commit ? el('code', {}, s.commit.slice(0, 10)) : ''),
      el('td', { class: 'usage' }, s.usage ? usageText(s.usage) : ''),
      el('td', { class: 'when' }, bar),
    );
  });
}

/**
 * A step that ran on a branch of its own: the branch and how its work came back.
 * @param {{ branch: string | null, merge: string, commit?: string | null, files?: string[] }} lane
 */
function laneNote(lane) {
  const where = lane.branch ? `lane ${lane.branch}` : 'own lane';
  const files = lane.files?.length ? ` in ${lane.files.join(', ')}` : '';
  const how =
    lane.merge === 'merged'
      ? `merged${lane.commit ? ` (${lane.commit.slice(0, 10)})` : ''}`
      : lane.merge === 'conflict'
        ? `conflict${files}`
        : lane.merge === 'not_merged'
          ? 'not merged'
          : lane.merge === 'unchanged'
            ? 'unchanged, nothing to merge'
            : String(lane.merge);
  return el('span', { class: `note lane ${lane.merge === 'conflict' || lane.merge === 'not_merged' ? 'bad' : ''}` }, `${where}: ${how}`);
}

/**
 * The Flow section: the routes the run took, what stopped it, the lane
 * branches kept for the user. Nothing for a run without any (older records
 * have no flow at all).
 * @param {any} r @returns {Array<HTMLElement>}
 */
export function flowSection(r) {
  const f = r.flow;
  /** @type {Array<any>} */
  const routes = Array.isArray(f?.routes) ? f.routes : [];
  /** @type {Array<string>} */
  const kept = Array.isArray(f?.keptBranches) ? f.keptBranches : [];
  const stop = f?.stop ?? null;
  if (!routes.length && !stop && !kept.length) return [];
  return [
    el('h2', {}, 'Flow'),
    routes.length > 0 && el('ul', { class: 'routes' }, ...routes.map((x) => el('li', {}, `${x.from} → ${x.to} (${routeValue(r, x)}), visit ${x.visit}`))),
    stop &&
      el(
        'div',
        { class: 'stop error' },
        'Stopped: ',
        el('code', {}, String(stop.code)),
        stop.step ? ` at step ${stop.step}` : '',
        stop.visits !== undefined ? ` (${stop.visits} visits)` : '',
        `: ${stop.message}`,
        stop.files?.length ? el('div', {}, `files: ${stop.files.join(', ')}`) : '',
      ),
    kept.length > 0 && el('p', { class: 'kept' }, 'Branches kept: ', ...kept.flatMap((b, k) => (k ? [', ', el('code', {}, b)] : [el('code', {}, b)]))),
  ].filter((x) => x instanceof HTMLElement);
}

/**
 * A route's value as `output=value` when the record tells which output it
 * was (the route's own `output`, or the one output of the step that had that
 * value), else the value alone.
 * @param {any} r @param {{ from: string, value: string, output?: string }} route
 */
function routeValue(r, route) {
  if (route.output) return `${route.output}=${route.value}`;
  const keys = new Set();
  for (const s of r.steps ?? []) {
    if (s.id !== route.from || !s.outputs) continue;
    for (const [k, v] of Object.entries(s.outputs)) if (v === route.value) keys.add(k);
  }
  return keys.size === 1 ? `${[...keys][0]}=${route.value}` : String(route.value);
}

/**
 * What an agent step cost, in short: as its gateway metered it (`calls`), else as its CLI reported it.
 * @param {{ model: string | null, inputTokens: number | null, outputTokens: number | null, costUsd: number | null, turns: number | null, calls?: number, unpriced?: boolean }} u
 */
export function usageText(u) {
  const parts = [`${count(u.inputTokens)} in / ${count(u.outputTokens)} out tokens`];
  if (u.costUsd !== null) parts.push(`${money(u.costUsd)}${u.unpriced ? ' (some calls unpriced)' : ''}`);
  if (u.turns !== null) parts.push(`${u.turns} turn${u.turns === 1 ? '' : 's'}`);
  if (u.calls !== undefined) parts.push(`${u.calls} call${u.calls === 1 ? '' : 's'}`);
  return `${u.model ?? 'agent'}: ${parts.join(', ')}`;
}
