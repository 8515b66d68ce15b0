// @ts-check
/** `#/`: the pipelines and the recent runs (of every project, or of the one chosen), redrawn every two seconds. */
import { api } from '../lib/api.js';
import { el } from '../lib/dom.js';
import { every } from '../lib/poll.js';
import { pipelinesTable } from './pipelines.js';
import { runsTable } from './runs-list.js';

/** How many recent runs are read: those of the project chosen are among them. */
const RECENT = 100;

export function homeView() {
  const pipelines = pipelinesTable();
  const runs = runsTable();
  const warm = el('p', { class: 'warm', hidden: true });
  every(async () => {
    pipelines.show(await api('/api/pipelines'));
    runs.show(await api(`/api/runs?limit=${RECENT}`));
    showWarm(warm, await api('/api/warm'));
  });
  return el('div', {}, el('h1', {}, 'Pipelines'), warm, pipelines.form, pipelines.table, el('div', { class: 'runs-head' }, el('h1', {}, 'Recent runs'), runs.picker), runs.table);
}

/** The server's warm gateways, when it keeps any (runner serve --warm N). @param {HTMLElement} p @param {{ gateways: number, containers?: number, size: number }} w */
function showWarm(p, w) {
  p.hidden = !w.size;
  const containers = w.containers ? `, ${w.containers} with the step's container made too` : '';
  p.textContent = `${w.gateways} of ${w.size} step gateway${w.size === 1 ? '' : 's'} warm${containers} (made ahead, each given to one step: runner serve --warm ${w.size})`;
}
