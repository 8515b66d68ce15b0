// @ts-check
/** `#/`: the pipelines and the recent runs, redrawn every two seconds. */
import { api } from '../lib/api.js';
import { el } from '../lib/dom.js';
import { every } from '../lib/poll.js';
import { pipelinesTable } from './pipelines.js';
import { runsTable } from './runs-list.js';

export function homeView() {
  const pipelines = pipelinesTable();
  const runs = runsTable();
  every(async () => {
    pipelines.show(await api('/api/pipelines'));
    runs.show(await api('/api/runs?limit=50'));
  });
  return el('div', {}, el('h1', {}, 'Pipelines'), pipelines.form, pipelines.table, el('h1', {}, 'Recent runs'), runs.table);
}
