/**
 * Cancel a run the door holds (running, or queued): the step running is
 * stopped, its work so far committed, the run recorded canceled; a queued run
 * is recorded not_started. The run is checked first (show.ts: known, the
 * door's); a run the door does not hold is refused with where it runs.
 */
import { RunnerError } from '../common/errors.js';
import type { StartDoor } from './door.js';
import { showRun } from './show.js';

export async function cancelRunOf(door: Pick<StartDoor, 'cancel' | 'runsDir' | 'home' | 'scope' | 'notStarted' | 'active'>, id: string): Promise<{ canceling: true; runId: string }> {
  const r = await showRun(door, id);
  // a run whose record says it ended is not canceled, even in the moment its holder is still letting it go
  // (a cancel right after wait_for_run saw it end was answered "canceling" in a CI run)
  const ended = !['running', 'queued', 'starting'].includes(r.status);
  if (!ended && (await door.cancel(id))) return { canceling: true, runId: id };
  throw new RunnerError(
    'not_cancelable',
    `run ${id} is ${r.status}${'steps' in r && r.status === 'running' ? ' in another process (runner exec or another server): cancel it there' : ', not running or queued on this server'}`,
  );
}
