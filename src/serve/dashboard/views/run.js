// @ts-check
/**
 * `#/runs/<id>`: one run. Its head (status, branch, inputs, push), its whole
 * plan (each run of its steps, then the steps not run yet), the routes its
 * flow took, its live log (once, one step's or all) and its change.
 */
import { api, runUrl } from '../lib/api.js';
import { badge, el, fill } from '../lib/dom.js';
import { duration, when } from '../lib/format.js';
import { every } from '../lib/poll.js';
import { showChanges, showDiff } from './diff.js';
import { actions } from './delivery.js';
import { logStream, runLog } from './log.js';
import { startedBy } from './runs-list.js';
import { flowSection, stepRows, stepRuns } from './steps.js';

/** why a run's branch was not pushed, as the pipeline file says it */
const PUSH_REASONS = /** @type {Record<string, string>} */ ({ policy_never: 'push: never', no_remote: 'the project has no remote', no_remote_always: 'push: always, and the project has no remote' });

/** @param {string} runId */
export function runView(runId) {
  const head = el('div', { class: 'run-head' });
  const steps = el('tbody');
  const flow = el('div', { id: 'flow' });
  const planNote = el('p', { class: 'plan-note muted', hidden: true });
  const stream = logStream(runId);
  // the actions redraw the record when they are done: refresh is set below, once polling starts
  const acts = actions(runId, () => refresh());
  const log = runLog(stream);
  /** the agents' final messages the reader opened, kept open as the table is redrawn */
  const opened = new Set();
  const showLog = (/** @type {string} */ name) => {
    log.select(name);
    log.node.scrollIntoView({ block: 'nearest' });
  };
  const diff = el('div', { id: 'diff', class: 'diff muted' }, 'The diff appears when the run ends.');
  const main = el(
    'div',
    {},
    el('p', {}, el('a', { href: '#/' }, '← all runs')),
    head,
    acts.node,
    el('h2', {}, 'Steps'),
    planNote,
    el(
      'table',
      { id: 'steps' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Step'), el('th', {}, 'Status'), el('th', {}, 'Exit'), el('th', {}, 'Duration'), el('th', {}, 'Commit'), el('th', {}, 'Agent usage'), el('th', {}, 'Timeline'))),
      steps,
    ),
    flow,
    el('h2', {}, 'Log'),
    log.node,
    el('h2', {}, 'Diff'),
    diff,
  );

  /** the status the diff was last drawn at: drawn once the run ends, and at a gate (the change so far), again when it ends after */
  let diffShown = '';
  const refresh = every(async () => {
    const r = await api(runUrl(runId));
    const live = r.status === 'running' || r.status === 'queued' || r.status === 'starting' || r.status === 'awaiting_approval';
    head.replaceChildren(runHead(r));
    acts.update(r);
    steps.replaceChildren(...stepRows(r, live, { opened, showLog }));
    planNote.hidden = !r.plan?.note;
    fill(planNote, [r.plan?.note ? `Not the pipeline file's plan: ${r.plan.note}.` : '']);
    flow.replaceChildren(...flowSection(r));
    log.know(stepRuns(r).filter((s) => s.status !== 'skipped' && !s.approval).map((s) => s.name));
    if (r.status !== 'queued' && r.status !== 'starting' && r.status !== 'not_started') stream.start(r.status); // again after a gate or a resume
    if ((!live || r.status === 'awaiting_approval') && diffShown !== r.status) {
      diffShown = r.status;
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

/** @param {any} r */
function runHead(r) {
  // a run at a gate has no duration yet (its gate row says since when it waits)
  const timed = r.status === 'running' ? Boolean(r.startedAt) : typeof r.durationMs === 'number';
  const hasInputs = r.inputs !== undefined && r.inputs !== null && Object.keys(r.inputs).length > 0;
  return el(
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
      r.forkOf && el('dt', {}, 'Fork of'),
      r.forkOf && el('dd', { id: 'fork-of' }, el('a', { href: `#/runs/${encodeURIComponent(r.forkOf.runId)}` }, r.forkOf.runId), ` from step ${r.forkOf.step}`, r.forkOf.commit ? ` (its branch began at ${String(r.forkOf.commit).slice(0, 10)})` : ''),
      r.startedAt && el('dt', {}, 'Started'),
      r.startedAt && el('dd', {}, when(r.startedAt)),
      (r.startedBy || r.requestedBy) && el('dt', {}, 'Started by'),
      (r.startedBy || r.requestedBy) && el('dd', { id: 'started-by' }, startedBy(r)),
      timed && el('dt', {}, 'Duration'),
      timed && el('dd', {}, r.status === 'running' ? `${duration(Date.now() - new Date(r.startedAt).getTime())} so far` : duration(r.durationMs)),
      hasInputs && el('dt', {}, 'Inputs'),
      hasInputs && el('dd', { id: 'inputs' }, ...Object.entries(r.inputs).map(([k, v]) => el('div', {}, el('code', {}, k), ' = ', String(v)))),
      r.push && el('dt', {}, 'Push'),
      r.push && el('dd', {}, r.pushed ? `pushed to ${r.push.remote ?? 'the remote'}` : r.push.error ?? (r.push.reason ? `not pushed (${PUSH_REASONS[r.push.reason] ?? r.push.reason})` : 'not pushed')),
    ),
    r.error && el('p', { class: 'error' }, typeof r.error === 'string' ? r.error : r.error.message),
  );
}
