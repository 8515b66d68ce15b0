// @ts-check
/**
 * The run's live log: one Server-Sent Events stream per page, shown once
 * (runLog), every step's lines or one step's alone.
 */
import { runUrl } from '../lib/api.js';
import { el } from '../lib/dom.js';
import { onLeave } from '../lib/poll.js';

const MAX_LOG_LINES = 10000;
const LINES_PER_STEP = 3000;
/**
 * A line is shown up to this many characters: the runner keeps lines of up to
 * 64 KiB, and a page holding thousands of them (the combined log and each
 * step's panel) would hold hundreds of megabytes. The log file has them whole.
 */
const LINE_SHOWN = 4000;

/** @typedef {(step: string, line: string) => void} LineListener */

/**
 * A stream of the run's log, started when asked (a run that is queued has none yet). The server ends it
 * when the run stops (its `end` event says the status it stopped at): at a gate, or failed. A run that went
 * on after (approved, resumed) is followed again when `start` is given another status than that: the new
 * stream reads the log from its start, and the lines this page has had already (counted per step, each
 * step's lines in their order) are not given again.
 * @param {string} runId
 */
export function logStream(runId) {
  /** @type {Array<LineListener>} */
  const listeners = [];
  /** lines given to the listeners, by step */
  const had = new Map();
  let opened = false;
  let open = false;
  /** the status the last stream ended at (undefined: it broke off, or none ended) */
  /** @type {string | undefined} */
  let endedAt;
  return {
    /** @param {LineListener} fn */
    listen(fn) {
      listeners.push(fn);
    },
    /**
     * Follows the log: the first time, or again once the run is at another status than the one its last
     * stream ended at (one that broke off: again while the run runs).
     * @param {string} status the run's status, as the page last read it
     */
    start(status) {
      if (open || (opened && (endedAt === undefined ? status !== 'running' : endedAt === status))) return;
      opened = open = true;
      endedAt = undefined;
      /** what the new stream repeats, by step */
      const skip = new Map(had);
      const source = new EventSource(runUrl(runId, '/log'));
      const done = () => {
        source.close();
        open = false;
      };
      source.onmessage = (e) => {
        const { step, line } = JSON.parse(e.data);
        const name = String(step);
        const left = skip.get(name) ?? 0;
        if (left > 0) return void skip.set(name, left - 1);
        had.set(name, (had.get(name) ?? 0) + 1);
        for (const fn of listeners) fn(name, String(line));
      };
      source.addEventListener('end', (e) => {
        try {
          endedAt = String(JSON.parse(/** @type {MessageEvent} */ (e).data).status);
        } catch {
          endedAt = undefined;
        }
        done();
      });
      source.onerror = done;
      onLeave(done);
    },
  };
}

/**
 * The run's log, each line once: every line in the order it came, with its
 * step's name, and a row of buttons above it that show one step's lines alone
 * (`select(name)`) or all of them again (`select(null)`). A step keeps its
 * last LINES_PER_STEP lines, the whole log its last MAX_LOG_LINES: a step that
 * pours out lines cannot push a quiet one's out of the page.
 * @param {ReturnType<typeof logStream>} stream
 */
export function runLog(stream) {
  const box = el('pre', { class: 'log', id: 'log' });
  const all = el('button', { type: 'button', class: 'log-step', 'aria-pressed': 'true', onclick: () => select(null) }, 'All steps');
  const picker = el('div', { class: 'log-steps', role: 'toolbar', 'aria-label': 'Whose lines the log shows' }, all);
  const node = el('div', { id: 'run-log' }, picker, box);
  /** @type {string | null} */
  let only = null;
  let total = 0;
  /** each step's lines on the page, oldest first, and its button */
  /** @type {Map<string, { lines: Array<HTMLElement>, count: number, button: HTMLElement }>} */
  const steps = new Map();
  /** @param {string} name */
  const stepOf = (name) => {
    let s = steps.get(name);
    if (s) return s;
    const button = el('button', { type: 'button', class: 'log-step', 'aria-pressed': 'false', dataset: { step: name }, onclick: () => select(name) }, name);
    s = { lines: [], count: 0, button };
    steps.set(name, s);
    picker.append(button);
    return s;
  };
  /** @param {string} name */
  const label = (name) => {
    const s = /** @type {{ count: number, button: HTMLElement }} */ (steps.get(name));
    s.button.textContent = `${name} (${s.count.toLocaleString('en')})`;
  };
  stream.listen((step, line) => {
    const s = stepOf(step);
    const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    const span = el('span', { class: 'line', dataset: { step }, hidden: only !== null && only !== step }, el('span', { class: 'step' }, `[${step}] `), ...shown(line));
    box.append(span);
    s.lines.push(span);
    s.count++;
    total++;
    if (s.lines.length > LINES_PER_STEP) s.lines.shift()?.remove();
    else if (total > MAX_LOG_LINES) {
      const first = /** @type {HTMLElement | null} */ (box.firstElementChild);
      if (first) {
        steps.get(first.dataset.step ?? '')?.lines.shift();
        first.remove();
      }
    }
    all.textContent = `All steps (${total.toLocaleString('en')})`;
    label(step);
    if (atEnd) box.scrollTop = box.scrollHeight;
  });
  /** Shows one step's lines alone, or (null) every step's. @param {string | null} name */
  const select = (name) => {
    only = name;
    if (name !== null) stepOf(name);
    for (const [n, s] of steps) {
      s.button.setAttribute('aria-pressed', String(n === name));
      for (const line of s.lines) line.hidden = name !== null && n !== name;
    }
    all.setAttribute('aria-pressed', String(name === null));
    if (name === null) box.removeAttribute('data-only');
    else box.dataset.only = name;
    box.scrollTop = box.scrollHeight;
  };
  /** The steps of the run in the record's order, so their buttons are there (and in order) before their first line. @param {Array<string>} names */
  const know = (names) => {
    for (const n of names) {
      const s = stepOf(n);
      if (!s.count) s.button.textContent = n;
      picker.append(s.button);
    }
  };
  return { node, select, know };
}

/** A line of the log as it is shown: cut past LINE_SHOWN, saying how much was left out. @param {string} line @returns {Array<Node | string>} */
export function shown(line) {
  if (line.length <= LINE_SHOWN) return [`${line}\n`];
  return [line.slice(0, LINE_SHOWN), el('span', { class: 'muted line-cut' }, ` … ${(line.length - LINE_SHOWN).toLocaleString('en')} more characters (runner logs has the line whole)`), '\n'];
}
