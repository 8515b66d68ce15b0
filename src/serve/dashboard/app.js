// @ts-check
/**
 * runner serve's dashboard, bundled for the browser (scripts/bundle-dashboard.mjs).
 * Two views over the JSON API, chosen by the URL's hash: `#/` lists the
 * pipelines and the recent runs (views/home.js); `#/runs/<id>` shows one run
 * (views/run.js).
 *
 * Every value from the server goes into the page as text (lib/dom.js), never
 * as markup: steps are hostile, and their output is shown as the characters
 * they printed. The page's Content-Security-Policy backs this up by allowing
 * no inline script.
 */
import { leave } from './lib/poll.js';
import { homeView } from './views/home.js';
import { runView } from './views/run.js';

function route() {
  leave();
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
