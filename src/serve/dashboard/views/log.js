// @ts-check
/**
 * The run's live log: one Server-Sent Events stream per page, each line
 * handed to whoever listens (the combined log, each step's panel).
 */
import { runUrl } from '../lib/api.js';
import { el } from '../lib/dom.js';
import { onLeave } from '../lib/poll.js';

const MAX_LOG_LINES = 5000;
/**
 * A line is shown up to this many characters: the runner keeps lines of up to
 * 64 KiB, and a page holding thousands of them (the combined log and each
 * step's panel) would hold hundreds of megabytes. The log file has them whole.
 */
const LINE_SHOWN = 4000;

/** @typedef {(step: string, line: string) => void} LineListener */

/** A stream of the run's log, started when asked (a run that is queued has none yet). @param {string} runId */
export function logStream(runId) {
  /** @type {Array<LineListener>} */
  const listeners = [];
  let started = false;
  return {
    /** @param {LineListener} fn */
    listen(fn) {
      listeners.push(fn);
    },
    start() {
      if (started) return;
      started = true;
      const source = new EventSource(runUrl(runId, '/log'));
      source.onmessage = (e) => {
        const { step, line } = JSON.parse(e.data);
        for (const fn of listeners) fn(String(step), String(line));
      };
      source.addEventListener('end', () => source.close());
      source.onerror = () => source.close();
      onLeave(() => source.close());
    },
  };
}

/**
 * A pre that lines are added to, its oldest dropped past a bound, kept
 * scrolled to the end while the reader is there.
 * @param {Record<string, any>} props @param {number} [max]
 */
export function logBox(props, max = MAX_LOG_LINES) {
  const box = el('pre', { class: 'log', ...props });
  let lines = 0;
  /** @param {Array<Node | string>} parts */
  const add = (...parts) => {
    if (++lines > max) box.firstChild?.remove();
    const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    box.append(el('span', { class: 'line' }, ...parts));
    if (atEnd) box.scrollTop = box.scrollHeight;
  };
  return { box, add };
}

/** A line of the log as it is shown: cut past LINE_SHOWN, saying how much was left out. @param {string} line @returns {Array<Node | string>} */
export function shown(line) {
  if (line.length <= LINE_SHOWN) return [`${line}\n`];
  return [line.slice(0, LINE_SHOWN), el('span', { class: 'muted line-cut' }, ` … ${(line.length - LINE_SHOWN).toLocaleString('en')} more characters (runner logs has the line whole)`), '\n'];
}

/** The whole run's log, each line with its step's name. @param {ReturnType<typeof logStream>} stream */
export function combinedLog(stream) {
  const { box, add } = logBox({ id: 'log' });
  stream.listen((step, line) => add(el('span', { class: 'step' }, `[${step}] `), ...shown(line)));
  return box;
}
