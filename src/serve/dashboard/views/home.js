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
  every(async () => {
    pipelines.show(await api('/api/pipelines'));
    runs.show(await api(`/api/runs?limit=${RECENT}`));
  });
  return el('div', {}, el('h1', {}, 'Pipelines'), pipelines.form, pipelines.table, el('div', { class: 'runs-head' }, el('h1', {}, 'Recent runs'), runs.picker), runs.table);
}
