// @ts-check
/** What a view keeps doing while it is shown (polling, streams), and stops when it goes. */
import { messageOf, setStatus } from './dom.js';

const POLL_MS = 2000;

/** @type {Array<() => void>} */
let cleanups = [];

/** Something to stop when the view changes. @param {() => void} fn */
export function onLeave(fn) {
  cleanups.push(fn);
}

/** Stops everything the last view started. */
export function leave() {
  for (const c of cleanups.splice(0)) c();
}

/**
 * Calls fn now and every two seconds after it ends, until the view changes;
 * a failure is said in the header and tried again. Returns a way to call it
 * again at once (after an action changed what it shows).
 * @param {() => Promise<void>} fn @returns {() => void}
 */
export function every(fn) {
  let stopped = false;
  let busy = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  const loop = async () => {
    if (busy) return;
    busy = true;
    clearTimeout(timer);
    try {
      await fn();
      setStatus('');
    } catch (err) {
      setStatus(`cannot reach the server: ${messageOf(err)}`);
    }
    busy = false;
    if (!stopped) timer = setTimeout(loop, POLL_MS);
  };
  void loop();
  onLeave(() => {
    stopped = true;
    clearTimeout(timer);
  });
  return () => void loop();
}
