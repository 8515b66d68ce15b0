// @ts-check
/**
 * runner serve's dashboard: two views over the JSON API, chosen by the URL's
 * hash. `#/` lists the pipelines (next run, file errors, a Run now button)
 * and the recent runs; `#/runs/<id>` shows one run: each run of its steps
 * (attempts, retries, lanes, a timeline of what ran at once), the routes
 * its flow took, its live log (Server-Sent Events) and its diff.
 *
 * Every value from the server goes into the page as text (textContent, text
 * nodes), never as markup: steps are hostile, and their output is shown as
 * the characters they printed. The page's Content-Security-Policy backs this
 * up by allowing no inline script.
 */

const POLL_MS = 2000;
const MAX_LOG_LINES = 5000;

/** @type {Array<() => void>} what to stop when the view changes */
let cleanups = [];

/**
 * An element with properties and children; strings become text nodes.
 * @param {string} tag
 * @param {Record<string, any>} [props]
 * @param {Array<Node | string | null | undefined | false>} children
 * @returns {HTMLElement}
 */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else node.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

/** @param {string} url @param {RequestInit} [init] */
async function api(url, init) {
  const res = await fetch(url, { credentials: 'same-origin', ...init });
  if (res.status === 401) {
    location.assign('/login');
    throw new Error('not logged in');
  }
  const body = res.headers.get('content-type')?.includes('json') ? await res.json() : await res.text();
  if (!res.ok) throw new Error(typeof body === 'object' && body && 'error' in body ? body.error : `${res.status} ${res.statusText}`);
  return body;
}

/** @param {number | null | undefined} ms */
function duration(ms) {
  if (ms === null || ms === undefined) return '';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** @param {string} iso */
function when(iso) {
  const d = new Date(iso);
  const diff = d.getTime() - Date.now();
  const abs = Math.abs(diff);
  const rel = abs < 60_000 ? `${Math.round(abs / 1000)}s` : abs < 3_600_000 ? `${Math.round(abs / 60_000)} min` : abs < 172_800_000 ? `${Math.round(abs / 3_600_000)} h` : `${Math.round(abs / 86_400_000)} days`;
  return el('time', { datetime: iso, title: d.toLocaleString() }, diff >= 0 ? `in ${rel}` : `${rel} ago`);
}

/** @param {string} status */
function badge(status) {
  return el('span', { class: `badge ${status}` }, status.replace('_', ' '));
}

/** @param {string} message */
function setStatus(message) {
  const s = document.getElementById('status');
  if (s) s.textContent = message;
}

/** @param {() => Promise<void>} fn */
function every(fn) {
  let stopped = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const loop = async () => {
    try {
      await fn();
      setStatus('');
    } catch (err) {
      setStatus(`cannot reach the server: ${err instanceof Error ? err.message : err}`);
    }
    if (!stopped) timer = setTimeout(loop, POLL_MS);
  };
  void loop();
  cleanups.push(() => {
    stopped = true;
    clearTimeout(timer);
  });
}

// ---- #/ : pipelines and recent runs ---------------------------------------

function homeView() {
  const pipelines = el('tbody');
  const runs = el('tbody');
  const form = el('div', { id: 'run-form' });
  const main = el(
    'div',
    {},
    el('h1', {}, 'Pipelines'),
    form,
    el('table', { id: 'pipelines' }, el('thead', {}, el('tr', {}, el('th', {}, 'Pipeline'), el('th', {}, 'Next run'), el('th', {}, 'File'), el('th', {}))), pipelines),
    el('h1', {}, 'Recent runs'),
    el(
      'table',
      { id: 'runs' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Run'), el('th', {}, 'Pipeline'), el('th', {}, 'Status'), el('th', {}, 'Started'), el('th', {}, 'Duration'))),
      runs,
    ),
  );
  every(async () => {
    /** @type {Array<Pipeline>} */
    const ps = await api('/api/pipelines');
    pipelines.replaceChildren(
      ...ps.map((p) =>
        el(
          'tr',
          { dataset: { pipeline: p.name ?? '' } },
          el('td', {}, p.name ?? el('span', { class: 'muted' }, '(does not load)')),
          el('td', {}, p.nextRuns.length ? when(p.nextRuns.slice().sort()[0] ?? '') : el('span', { class: 'muted' }, 'no schedule')),
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
        ),
      ),
    );
    if (!ps.length) pipelines.append(el('tr', {}, el('td', { colspan: 4, class: 'muted' }, 'No pipeline files in the folder yet.')));
    /** @type {Array<any>} */
    const rs = await api('/api/runs?limit=50');
    runs.replaceChildren(
      ...rs.map((r) =>
        el(
          'tr',
          { dataset: { run: r.runId } },
          el('td', {}, el('a', { href: `#/runs/${encodeURIComponent(r.runId)}` }, r.runId)),
          el('td', {}, r.pipeline ?? ''),
          el('td', {}, badge(r.status)),
          el('td', {}, r.startedAt ? when(r.startedAt) : ''),
          el('td', {}, r.status === 'running' ? duration(Date.now() - new Date(r.startedAt).getTime()) : duration(r.durationMs)),
        ),
      ),
    );
    if (!rs.length) runs.append(el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No runs yet.')));
  });
  return main;
}

/**
 * @typedef {{ description?: string, default?: string }} Input
 * @typedef {{ runId: string, at: string, error: string }} Failure
 * @typedef {{ name: string | null, file: string, nextRuns: string[], errors: string[], inputs: Record<string, Input>, lastFailure: Failure | null }} Pipeline
 */

/**
 * The form for a pipeline's inputs, above the tables (which the polling redraws).
 * @param {HTMLElement} into @param {Pipeline} p
 */
function showRunForm(into, p) {
  const fields = Object.entries(p.inputs).map(([name, input]) => {
    const field = /** @type {HTMLInputElement} */ (el('input', { id: `input-${name}`, name, type: 'text' }));
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
    const r = await api(`/api/pipelines/${encodeURIComponent(name)}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs }),
    });
    location.hash = `#/runs/${encodeURIComponent(r.runId)}`;
  } catch (err) {
    setStatus(`could not start ${name}: ${err instanceof Error ? err.message : err}`);
  }
}

// ---- #/runs/<id> : one run ------------------------------------------------

/** @param {string} runId */
function runView(runId) {
  const head = el('div', { class: 'run-head' });
  const steps = el('tbody');
  const flow = el('div', { id: 'flow' });
  const log = el('pre', { id: 'log', class: 'log' });
  const diff = el('pre', { id: 'diff', class: 'diff muted' }, 'The diff appears when the run ends.');
  const main = el(
    'div',
    {},
    el('p', {}, el('a', { href: '#/' }, '← all runs')),
    head,
    el('h2', {}, 'Steps'),
    el(
      'table',
      { id: 'steps' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Step'), el('th', {}, 'Status'), el('th', {}, 'Exit'), el('th', {}, 'Duration'), el('th', {}, 'Commit'), el('th', {}, 'Agent usage'), el('th', {}, 'Timeline'))),
      steps,
    ),
    flow,
    el('h2', {}, 'Log'),
    log,
    el('h2', {}, 'Diff'),
    diff,
  );

  let streaming = false;
  let diffShown = false;
  let lines = 0;
  every(async () => {
    const r = await api(`/api/runs/${encodeURIComponent(runId)}`);
    const live = r.status === 'running' || r.status === 'queued' || r.status === 'starting';
    const hasInputs = r.inputs !== undefined && r.inputs !== null && Object.keys(r.inputs).length > 0;
    head.replaceChildren(
      el(
        'div',
        {},
        el('h1', {}, r.pipeline ?? 'run', ' ', badge(r.status)),
        el(
          'dl',
          {},
          el('dt', {}, 'Run'),
          el('dd', {}, el('code', {}, r.runId)),
          r.branch && el('dt', {}, 'Branch'),
          r.branch && el('dd', {}, el('code', {}, r.branch)),
          r.startedAt && el('dt', {}, 'Started'),
          r.startedAt && el('dd', {}, when(r.startedAt)),
          r.durationMs !== undefined && el('dt', {}, 'Duration'),
          r.durationMs !== undefined && el('dd', {}, r.status === 'running' ? duration(Date.now() - new Date(r.startedAt).getTime()) : duration(r.durationMs)),
          hasInputs && el('dt', {}, 'Inputs'),
          hasInputs && el('dd', { id: 'inputs' }, ...Object.entries(r.inputs).map(([k, v]) => el('div', {}, el('code', {}, k), ' = ', String(v)))),
          r.push && el('dt', {}, 'Push'),
          r.push && el('dd', {}, r.pushed ? `pushed to ${r.push.remote ?? 'the remote'}` : r.push.error ?? (r.push.reason ? `not pushed (${r.push.reason})` : 'not pushed')),
        ),
        r.error && el('p', { class: 'error' }, typeof r.error === 'string' ? r.error : r.error.message),
        live && el('button', { class: 'danger', onclick: () => cancel(runId) }, 'Cancel run'),
      ),
    );
    steps.replaceChildren(...stepRows(r, live));
    flow.replaceChildren(...flowSection(r));
    if (!streaming && r.status !== 'queued' && r.status !== 'starting' && r.status !== 'not_started') {
      streaming = true;
      const source = new EventSource(`/api/runs/${encodeURIComponent(runId)}/log`);
      source.onmessage = (e) => {
        const { step, line } = JSON.parse(e.data);
        if (++lines > MAX_LOG_LINES) log.firstChild?.remove();
        const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
        log.append(el('span', { class: 'line' }, el('span', { class: 'step' }, `[${step}] `), `${line}\n`));
        if (atEnd) log.scrollTop = log.scrollHeight;
      };
      source.addEventListener('end', () => source.close());
      source.onerror = () => source.close();
      cleanups.push(() => source.close());
    }
    if (!live && !diffShown) {
      diffShown = true;
      if (r.status === 'not_started') {
        diff.textContent = 'The run did not start: it changed nothing.';
      } else if (r.workspace === 'persistent_directory') {
        showChanges(r.steps ?? [], diff);
      } else {
        await showDiff(runId, diff);
      }
    }
  });
  return main;
}

/** The name a step's run goes by (`implement#2`, `build[0]`), or its id. @param {{ id: string, name?: string | null }} s */
function resultName(s) {
  return s.name ?? s.id;
}

/**
 * Every run of a step in the record's order (route visits and retries each
 * their own entry), then, while the run runs, those running now that have no
 * entry yet: from `running`, or `current` in the records of older runners.
 * @param {any} r @returns {Array<any>}
 */
function stepRuns(r) {
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
function stepRows(r, live) {
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
    if (s.egress && s.egress.refused.length) {
      notes.push(el('span', { class: 'note egress', title: 'hosts its gateway refused it' }, `egress refused: ${s.egress.refused.slice(0, 5).map((/** @type {{ host: string, count: number }} */ r) => `${r.host} ×${r.count}`).join(', ')}${s.egress.refused.length > 5 || s.egress.others ? ', …' : ''}`));
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
function flowSection(r) {
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
 * A persistent directory's run has no diff: what each step added, modified and deleted.
 * @param {Array<any>} steps @param {HTMLElement} into
 */
function showChanges(steps, into) {
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

/**
 * What an agent step cost: as its gateway metered it (`calls`), else as its CLI reported it.
 * @param {{ model: string | null, inputTokens: number | null, outputTokens: number | null, costUsd: number | null, turns: number | null, calls?: number, unpriced?: boolean }} u
 */
function usageText(u) {
  const parts = [`${u.inputTokens ?? '?'} in / ${u.outputTokens ?? '?'} out tokens`];
  if (u.costUsd !== null) parts.push(`$${u.costUsd.toFixed(4)}${u.unpriced ? ' (some calls unpriced)' : ''}`);
  if (u.turns !== null) parts.push(`${u.turns} turn${u.turns === 1 ? '' : 's'}`);
  if (u.calls !== undefined) parts.push(`${u.calls} call${u.calls === 1 ? '' : 's'}`);
  return `${u.model ?? 'agent'}: ${parts.join(', ')}`;
}

/** @param {string} runId @param {HTMLElement} into */
async function showDiff(runId, into) {
  try {
    /** @type {string} */
    const text = await api(`/api/runs/${encodeURIComponent(runId)}/diff`);
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

/** @param {string} runId */
async function cancel(runId) {
  try {
    await api(`/api/runs/${encodeURIComponent(runId)}/cancel`, { method: 'POST' });
    setStatus('canceling…');
  } catch (err) {
    setStatus(`could not cancel: ${err instanceof Error ? err.message : err}`);
  }
}

// ---- routing ------------------------------------------------------------

function route() {
  for (const c of cleanups.splice(0)) c();
  const main = document.getElementById('main');
  if (!main) return;
  const m = /^#\/runs\/(.+)$/.exec(location.hash);
  const runId = m ? decoded(m[1] ?? '') : undefined;
  main.replaceChildren(runId !== undefined ? runView(runId) : homeView());
  document.title = runId !== undefined ? `runner: ${runId}` : 'runner';
}

/** A hash part as text; a malformed %-escape (a hand-edited address) is taken as written. @param {string} s */
function decoded(s) {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

window.addEventListener('hashchange', route);
route();
