// @ts-check
/**
 * Building the page. Every value from the server goes in as text (text
 * nodes, textContent, attributes set one by one), never as markup: steps are
 * hostile, and what they printed is shown as the characters they printed.
 * Every text node is made visible first (the rule the CLI follows,
 * src/common/visible.ts): a step's control characters and bidirectional
 * overrides show as `\x1b`, `\r`, `\u202e`, so a file named `invoice‮hs.txt`
 * or a line of code reordered by an override (Trojan Source) reads as what it
 * is, not as what it looks like.
 */
import { visibleLines } from '../../../common/visible.js';

/** @typedef {Node | string | null | undefined | false} Child */

/**
 * An element with properties and children; strings become text nodes.
 * @param {string} tag
 * @param {Record<string, any>} [props]
 * @param {Array<Child>} children
 * @returns {HTMLElement}
 */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k === 'hidden' || k === 'disabled' || k === 'checked') /** @type {any} */ (node)[k] = Boolean(v);
    else node.setAttribute(k, k === 'title' ? visibleLines(String(v)) : String(v)); // a tooltip is shown text too
  }
  append(node, children);
  return node;
}

/**
 * Appends children one by one: never spread into a call, which a list of a
 * few hundred thousand overflows ("Maximum call stack size exceeded").
 * @param {Node} node @param {Iterable<Child>} children
 */
export function append(node, children) {
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.appendChild(typeof c === 'string' ? text(c) : c);
  return node;
}

/** A text node of `s` with its control characters and bidi overrides made visible (newlines and tabs stay). @param {string} s */
export function text(s) {
  return document.createTextNode(visibleLines(s));
}

/** The node's children replaced by these, however many. @param {Node} node @param {Iterable<Child>} children */
export function fill(node, children) {
  const frag = document.createDocumentFragment();
  append(frag, children);
  /** @type {Element} */ (node).replaceChildren(frag);
  return node;
}

/** @param {string} status */
export function badge(status) {
  return el('span', { class: `badge ${status}` }, status.replace('_', ' '));
}

/** The line in the header that says what went wrong with the server. @param {string} message */
export function setStatus(message) {
  const s = document.getElementById('status');
  if (s) s.textContent = visibleLines(message);
}

/** An error's message, whatever was thrown. @param {unknown} err */
export function messageOf(err) {
  return err instanceof Error ? err.message : String(err);
}
