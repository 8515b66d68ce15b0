// @ts-check
/**
 * The run page's panel of each step's run: its own lines of the live log (for
 * an agent step, its transcript as the runner renders it: messages, tool
 * calls, results), and for an agent step its usage and final message, from
 * the record once the step has ended. Agent steps and running ones are open;
 * the others fold.
 */
import { badge, el, fill } from '../lib/dom.js';
import { logBox, shown } from './log.js';
import { stepRuns, usageText } from './steps.js';

const LINES_PER_STEP = 3000;

/**
 * @typedef {{ node: HTMLDetailsElement, head: HTMLElement, info: HTMLElement, add: (...parts: Array<Node | string>) => void, touched: boolean, meant: boolean }} Panel
 */

/** @param {ReturnType<typeof import('./log.js').logStream>} stream */
export function stepPanels(stream) {
  const node = el('div', { id: 'by-step' });
  /** @type {Map<string, Panel>} */
  const panels = new Map();
  /** @param {string} name */
  const panel = (name) => {
    let p = panels.get(name);
    if (p) return p;
    const head = el('summary', {}, el('span', { class: 'step-name' }, name));
    const info = el('div', { class: 'step-info' });
    const { box, add } = logBox({ class: 'log step-log' }, LINES_PER_STEP);
    const details = /** @type {HTMLDetailsElement} */ (el('details', { class: 'step-panel', dataset: { step: name } }, head, info, box));
    details.open = true;
    // toggle fires for the page's own changes too (later, once): only one it did not mean is the reader's
    details.addEventListener('toggle', () => {
      const me = /** @type {Panel} */ (panels.get(name));
      if (details.open !== me.meant) me.touched = true;
    });
    p = { node: details, head, info, add, touched: false, meant: true };
    panels.set(name, p);
    node.appendChild(details);
    return p;
  };
  stream.listen((step, line) => panel(step).add(...shown(line)));
  /** The record as it is now: each step's status, agent, usage and final message; panels in the record's order. @param {any} r */
  const update = (r) => {
    const list = stepRuns(r).filter((s) => s.status !== 'skipped');
    list.forEach((s, i) => {
      const p = panel(s.name);
      fill(p.head, [el('span', { class: 'step-name' }, s.name), ' ', badge(s.status), s.agent && el('span', { class: 'muted' }, ` agent ${s.agent}`), s.usage && el('span', { class: 'agent-usage' }, usageText(s.usage))]);
      const said = s.agent ? s.outputs?.result : undefined;
      fill(p.info, [said?.trim() ? el('div', { class: 'agent-said' }, el('div', { class: 'label' }, 'Final message'), el('div', { class: 'text' }, said.trim())) : null]);
      // a step that ended without being an agent folds, unless the reader opened or closed it
      if (!p.touched) p.node.open = p.meant = Boolean(s.agent) || s.status === 'running';
      if (node.children[i] !== p.node) node.insertBefore(p.node, node.children[i] ?? null);
    });
  };
  return { node, update };
}
