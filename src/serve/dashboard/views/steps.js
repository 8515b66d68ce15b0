// @ts-check
/**
 * The run page's steps table and flow section: the whole plan (every step of
 * the pipeline, from the start: those not run yet pending), each run of a step
 * (attempts, retries, items, lanes), the steps it ran at once with, a bar
 * placing it in the run's time with what it says; gates with what they ask;
 * the routes the flow took and what stopped it.
 */
import { badge, el } from '../lib/dom.js';
import { bytes, count, duration, money } from '../lib/format.js';

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
 * The steps table's rows: the whole plan. First each run of a step by its name
 * (in the order they ran), what the flow did with it (attempt, retry, item,
 * lane and its merge), the steps it ran at once with, a bar placing it in the
 * run's time with what it says (when, how long; a running step's output and
 * agent events so far); then each step of the pipeline that has not run (yet):
 * pending while the run goes on, not run once it ended. A gate (an approval
 * step) is a row of its own kind, with what it asks and its decision.
 * @param {any} r @param {boolean} live
 * @param {{ opened?: Set<string>, showLog?: (name: string) => void }} [o] the final messages the reader opened (kept open across redraws); what a step's name does when clicked
 */
export function stepRows(r, live, o = {}) {
  const list = stepRuns(r);
  /** @type {Array<any>} */
  const plan = Array.isArray(r.plan?.steps) ? r.plan.steps : [];
  const planned = new Map(plan.map((p) => [p.id, p]));
  const spans = list.map(span);
  const known = /** @type {Array<{ start: number, end: number }>} */ (spans.filter((x) => x !== null));
  const runStart = new Date(r.startedAt).getTime();
  const runEnd = r.finishedAt ? new Date(r.finishedAt).getTime() : live ? Date.now() : NaN;
  const t0 = Math.min(...known.map((x) => x.start), ...(Number.isFinite(runStart) ? [runStart] : []));
  const t1 = Math.max(...known.map((x) => x.end), ...(Number.isFinite(runEnd) ? [runEnd] : []));
  const total = Math.max(t1 - t0, 1);
  const ran = list.map((s, i) => {
    const here = spans[i];
    const step = planned.get(s.id);
    const together = here ? list.filter((_, j) => j !== i && spans[j] && /** @type {any} */ (spans[j]).start < here.end && here.start < /** @type {any} */ (spans[j]).end).map((x) => x.name) : [];
    /** @type {Array<HTMLElement>} */
    const notes = [];
    if (step?.kind === 'approval') notes.push(el('span', { class: 'note kind' }, 'approval gate'));
    if (s.carried) notes.push(el('span', { class: 'note carried', title: 'not run in this run: its outcome, outputs and commit are those of the run it came from' }, `carried from ${s.carried.from}`));
    if (s.attempt > 1) notes.push(el('span', { class: 'note attempt' }, `attempt ${s.attempt}`));
    if (s.item) notes.push(el('span', { class: 'note item' }, `item ${s.item.index}: ${s.item.value}`));
    if (typeof s.retryInMs === 'number') {
      // the next attempt is a later run of the same name but its #N (`build[1]`, `build[1]#2`)
      const again = list.slice(i + 1).some((x) => baseName(x.name) === baseName(s.name));
      const after = duration(s.retryInMs);
      notes.push(el('span', { class: 'note retry' }, again ? `retried after ${after}` : live ? `runs again after ${after}` : `was to run again after ${after}`));
    }
    if (s.base) notes.push(baseNote(s.base));
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
    const said = s.agent && typeof s.outputs?.result === 'string' ? s.outputs.result.trim() : '';
    /** @type {HTMLElement | string} */
    let when = '';
    if (here && known.length) {
      const b = el('span', { class: `bar ${s.status}` });
      b.style.left = `${(((here.start - t0) / total) * 100).toFixed(2)}%`;
      b.style.width = `${(((here.end - here.start) / total) * 100).toFixed(2)}%`;
      const running = s.status === 'running';
      when = el(
        'div',
        {},
        el('div', { class: 'timeline', title: `from ${duration(here.start - t0)} to ${duration(here.end - t0)} into the run` }, b),
        el('div', { class: 'when-said' }, running ? `started ${clock(here.start)}, running ${duration(Date.now() - here.start)}` : `${clock(here.start)} → ${clock(here.end)} (${duration(here.end - here.start)})`),
        running ? activityLines(r.activity?.[s.name]) : null,
      );
    }
    const row = el(
      'tr',
      { dataset: { step: s.name, id: s.id, kind: step?.kind ?? (s.agent ? 'agent' : 'run') }, class: step?.kind === 'approval' ? 'gate' : undefined },
      el(
        'td',
        {},
        stepName(s.name, step?.kind === 'approval' || s.approval ? undefined : o.showLog), // a gate prints nothing
        notes.length > 0 && el('div', { class: 'notes' }, ...notes.flatMap((n, k) => (k ? [' · ', n] : [n]))),
        step?.kind === 'approval' && gateBox(step, r),
        said && finalMessage(s.name, said, o.opened),
      ),
      el('td', {}, badge(step?.kind === 'approval' && gateState(step, r) ? /** @type {string} */ (gateState(step, r)) : s.status)),
      el('td', {}, s.exitCode === null || s.exitCode === undefined ? '' : String(s.exitCode)),
      el('td', {}, duration(s.durationMs)),
      el('td', {}, s.commit ? el('code', {}, s.commit.slice(0, 10)) : ''),
      el('td', { class: 'usage' }, s.usage ? usageText(s.usage) : ''),
      el('td', { class: 'when' }, when),
    );
    return row;
  });
  const ranIds = new Set(list.map((s) => s.id));
  const waiting = plan.filter((p) => !ranIds.has(p.id) && !(Array.isArray(p.runs) && p.runs.length)).map((p) => planRow(p, r));
  return [...ran, ...waiting];
}

/** A step's name, which shows its lines of the log when clicked. @param {string} name @param {((name: string) => void) | undefined} showLog */
function stepName(name, showLog) {
  if (!showLog) return el('span', { class: 'step-name' }, name);
  return el('button', { type: 'button', class: 'link step-name', title: `show the log of ${name} alone`, onclick: () => showLog(name) }, name);
}

/**
 * A failed verify step's word on the run's base (src/run/base-check.ts): the same command failed there too, or passed.
 * @param {{ commit: string, verdict: string, exitCode: number | null, runId: string, remembered?: boolean }} b
 */
function baseNote(b) {
  const short = b.commit.slice(0, 10);
  const seen = b.remembered ? `, as run ${b.runId} found` : '';
  return b.verdict === 'pre_existing'
    ? el('span', { class: 'note base-old', title: `the same step failed on the run's base ${b.commit} too${seen}: not this run's doing` }, `pre-existing (failed on the base ${short} too)`)
    : el('span', { class: 'note bad base-new', title: `the same step passed on the run's base ${b.commit}${seen}: this run broke it` }, `introduced by this run (passed on the base ${short})`);
}

/**
 * An agent's final message under its row, folded; kept open across the page's redraws once the reader opened it.
 * @param {string} name @param {string} said @param {Set<string> | undefined} opened
 */
function finalMessage(name, said, opened) {
  const d = /** @type {HTMLDetailsElement} */ (el('details', { class: 'agent-said' }, el('summary', {}, 'Final message'), el('div', { class: 'text' }, said)));
  d.open = opened?.has(name) ?? false;
  d.addEventListener('toggle', () => (d.open ? opened?.add(name) : opened?.delete(name)));
  return d;
}

/** A running step's activity (GET /api/runs/:id `activity`): what it printed last, an agent's calls so far. @param {any} a */
function activityLines(a) {
  if (!a || typeof a !== 'object') return null;
  const ago = (/** @type {string | null} */ at) => (at ? ` (${duration(Math.max(0, Date.now() - new Date(at).getTime()))} ago)` : '');
  /** @type {Array<HTMLElement>} */
  const lines = [];
  if (a.agent) {
    const g = a.agent;
    const parts = [`${g.toolCalls} tool call${g.toolCalls === 1 ? '' : 's'}`, `${g.messages} message${g.messages === 1 ? '' : 's'}`];
    if (g.failedTools) parts.push(`${g.failedTools} failed`);
    lines.push(el('div', { class: 'activity agent' }, parts.join(' · ')));
    if (g.last) lines.push(el('div', { class: 'activity last', title: g.last }, `last${ago(g.lastAt)}: ${g.last}`));
  } else if (a.output) {
    const o = a.output;
    if (!o.bytes) lines.push(el('div', { class: 'activity' }, 'no output yet'));
    else {
      lines.push(el('div', { class: 'activity' }, `${bytes(o.bytes)} of output`));
      if (o.last) lines.push(el('div', { class: 'activity last', title: o.last }, `last line${ago(o.lastAt)}: ${o.last}`));
    }
  }
  return lines.length ? el('div', { class: 'activities' }, ...lines) : null;
}

/** A time of day, to the second. @param {number} ms */
function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}

/**
 * A step of the plan that has no run (yet): pending while the run goes on, not run once it ended; a gate
 * with what it asks; what kind of step it is and what it waits for.
 * @param {any} p @param {any} r
 */
function planRow(p, r) {
  /** @type {Array<HTMLElement>} */
  const notes = [];
  if (p.kind === 'approval') notes.push(el('span', { class: 'note kind' }, 'approval gate'));
  if (p.kind === 'agent') notes.push(el('span', { class: 'note kind' }, `agent ${p.agent ?? ''}`.trim()));
  if (p.forEach !== undefined) notes.push(el('span', { class: 'note item' }, p.forEach ? `one run per item of ${p.forEach}` : 'one run per item'));
  if (Array.isArray(p.needs) && p.needs.length) notes.push(el('span', { class: 'note needs' }, `after ${p.needs.join(', ')}`));
  if (p.route && Array.isArray(p.route.to)) notes.push(el('span', { class: 'note route' }, `its ${p.route.output} may send the run to ${p.route.to.join(', ')}`));
  if (p.verify) notes.push(el('span', { class: 'note verify', title: 'merge and apply require it to have passed' }, 'verify'));
  const state = String(p.state ?? 'pending');
  return el(
    'tr',
    { dataset: { step: p.id, id: p.id, kind: p.kind, state }, class: `planned${p.kind === 'approval' ? ' gate' : ''}` },
    el(
      'td',
      {},
      el('span', { class: 'step-name' }, p.id),
      p.title && el('span', { class: 'muted' }, ` ${p.title}`),
      notes.length > 0 && el('div', { class: 'notes' }, ...notes.flatMap((n, k) => (k ? [' · ', n] : [n]))),
      p.kind === 'approval' && gateBox(p, r),
    ),
    el('td', {}, badge(state)),
    el('td', {}),
    el('td', {}),
    el('td', {}),
    el('td', {}),
    el('td', { class: 'when' }, state === 'pending' ? el('span', { class: 'muted' }, 'not started yet') : state === 'not_run' ? el('span', { class: 'muted' }, 'the run ended before it') : ''),
  );
}

/** A unit's step id: `approve#2` → `approve`. @param {string} name */
function baseId(name) {
  return String(name).replace(/#\d+$/, '').replace(/\[\d+\]$/, '');
}

/** The newest decision taken at gate step `id` (record.decisions), if any. @param {any} r @param {string} id */
function decisionAt(r, id) {
  /** @type {Array<any>} */
  const all = Array.isArray(r.decisions) ? r.decisions : [];
  return all.filter((d) => baseId(d.step) === id).pop();
}

/** A gate's state from the record: awaiting, or its decision; undefined when it has neither. @param {any} p @param {any} r */
function gateState(p, r) {
  const g = r.gate && r.gate.id === p.id ? r.gate : null;
  const d = decisionAt(r, p.id);
  if (g && r.status === 'awaiting_approval') return d && Date.parse(d.at) >= Date.parse(g.since) ? d.decision : 'awaiting_approval';
  return d ? d.decision : undefined;
}

/** Who decided: `ana (cli)`, `10.0.0.5 (dashboard)`, `timeout`. @param {any} by */
function decider(by) {
  if (!by || typeof by !== 'object') return '';
  if (by.via === 'timeout') return 'timeout';
  const who = by.user || by.from || '';
  return who ? `${who} (${by.via})` : String(by.via ?? '');
}

/**
 * What a gate asks, since when it waits and until when, and once decided, who decided, through which door, and what they said.
 * Its `.gate-actions` (while it waits) is where Approve and Reject go.
 * @param {any} p @param {any} r @returns {HTMLElement}
 */
export function gateBox(p, r) {
  const g = r.gate && r.gate.id === p.id ? r.gate : null;
  const prompt = (g && typeof g.prompt === 'string' && g.prompt) || p.approval?.prompt || '';
  const block = el('div', { class: 'gate-box' }, prompt ? el('div', { class: 'gate-prompt' }, prompt) : el('div', { class: 'gate-prompt muted' }, 'No prompt.'));
  const state = gateState(p, r);
  const d = decisionAt(r, p.id);
  if (state === 'awaiting_approval') {
    block.append(el('div', { class: 'gate-wait muted' }, g?.since ? `waiting since ${new Date(g.since).toLocaleString()}` : 'waiting', g?.deadline ? `; it ends rejected (timed out) at ${new Date(g.deadline).toLocaleString()}` : ''));
    block.append(el('div', { class: 'gate-actions muted', dataset: { step: p.id } }, 'Decide with Approve… or Reject… above; the change so far is under Diff, below.'));
  } else if (d && (state === 'approved' || state === 'rejected')) {
    const by = decider(d.by);
    block.append(el('div', { class: `gate-decision ${d.decision}` }, `${d.decision}${by ? ` by ${by}` : ''}${d.at ? `, ${new Date(d.at).toLocaleString()}` : ''}`, d.comment ? el('div', { class: 'gate-comment' }, d.comment) : null));
  } else if (p.approval?.timeout) {
    // the file's `1h`, or the milliseconds it was read as
    const t = String(p.approval.timeout);
    block.append(el('div', { class: 'muted' }, `waits at most ${/^\d+$/.test(t) ? duration(Number(t)) : t}, then the run ends rejected (timed out)`));
  }
  return block;
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
  else if (u.unpriced) parts.push('unpriced');
  if (u.turns !== null) parts.push(`${u.turns} turn${u.turns === 1 ? '' : 's'}`);
  if (u.calls !== undefined) parts.push(`${u.calls} call${u.calls === 1 ? '' : 's'}`);
  return `${u.model ?? 'agent'}: ${parts.join(', ')}`;
}
