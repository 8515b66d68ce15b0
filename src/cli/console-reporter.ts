/**
 * Shows a run on the console. On a terminal, a live status line (which step,
 * elapsed time) stays under the step output; otherwise plain lines only.
 * Step output goes to `out` prefixed with the step id; runner messages to `err`.
 * Step-made text is shown with its control characters made visible (visible.ts).
 */
import type { Isolation } from '../pipeline/schema.js';
import { formatDuration } from '../common/durations.js';
import { visible, visibleMessage } from '../common/visible.js';
import type { PullProgress } from '../container/runtime.js';
import type { RunRecord } from '../run/record.js';
import type { Reporter } from '../run/reporter.js';
import { describeStatus, resultName, type StepResult } from '../run/step-result.js';
import { changeCounts } from '../workspace/snapshot.js';

interface Sink {
  write(s: string): unknown;
  writableLength?: number;
  once?(event: 'drain', fn: () => void): unknown;
}

/** Above this much unwritten console output, a step's output waits. */
const HIGH_WATER = 1024 * 1024;

export class ConsoleReporter implements Reporter {
  /** the steps running now, by name (several at once when steps run in parallel) */
  private readonly current = new Map<string, { index: number; total: number; since: number }>();
  private timer?: NodeJS.Timeout;
  private statusShown = false;
  private lastPull = 0;
  private lastPullImage = '';

  constructor(
    private readonly out: Sink,
    private readonly err: Sink,
    private readonly live: boolean,
  ) {}

  runStarted(r: RunRecord, stepIds: string[]): void {
    const where = r.branch ? `on branch ${r.branch} (base ${r.baseSha?.slice(0, 10)})` : `in ${r.worktree}`;
    const task = r.taskId ? ` for task ${r.taskId}` : '';
    this.say(`run ${r.runId}: pipeline ${r.pipeline}, ${stepIds.length} step${stepIds.length === 1 ? '' : 's'}${task} ${where}`);
  }

  pullProgress(image: string, p: PullProgress): void {
    const now = Date.now();
    // at most one line a second per image; each image's first (that a pull begins) always
    if (image === this.lastPullImage && now - this.lastPull < 1000 && p.fraction !== 1) return;
    this.lastPull = now;
    this.lastPullImage = image;
    const pct = p.fraction !== undefined ? ` ${Math.round(p.fraction * 100)}%` : '';
    this.say(`pulling ${image} from its registry${pct}: ${p.status}`);
  }

  stepStarted(s: { id: string; index: number; total: number; image: string; isolation?: Isolation }): void {
    this.current.set(s.id, { index: s.index, total: s.total, since: Date.now() });
    this.say(`▶ step ${s.id} (${s.index + 1}/${s.total}) in ${s.image}${s.isolation === 'gvisor' ? ' under gVisor' : ''}`);
    if (this.live && !this.timer) {
      this.timer = setInterval(() => this.drawStatus(), 1000);
      this.timer.unref();
      this.drawStatus();
    }
  }

  stepLine(stepId: string, _stream: 'stdout' | 'stderr', line: string): void {
    this.clearStatus();
    this.out.write(`[${stepId}] ${visible(line)}\n`);
    this.drawStatus();
  }

  stepFinished(r: StepResult): void {
    this.current.delete(resultName(r));
    if (this.timer && !this.current.size) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
    const mark = r.status === 'completed' ? '✓' : '✗';
    const c = r.changes && changeCounts(r.changes);
    const commit = c
      ? `${c.added} added, ${c.modified} modified, ${c.deleted} deleted`
      : r.commit
        ? `commit ${r.commit.slice(0, 10)}`
        : 'no changes';
    const why = r.message ? `: ${r.message}` : '';
    this.say(`${mark} step ${resultName(r)} ${describeStatus(r.status, r.exitCode)} in ${formatDuration(r.durationMs)} (${commit})${why}`);
  }

  info(message: string): void {
    this.say(message);
  }

  warn(message: string): void {
    this.say(`warning: ${message}`);
  }

  runFinished(r: RunRecord): void {
    const took = r.durationMs !== null ? ` in ${formatDuration(r.durationMs)}` : '';
    const pushed = r.pushed ? `, pushed to ${r.push?.remote}` : '';
    const err = r.error ? `: ${r.error.message}` : '';
    const where = r.branch ? `; branch ${r.branch}` : '';
    this.say(`run ${r.runId} ${r.status}${took}${where}${pushed}${err}`);
  }

  backpressure(): Promise<void> | undefined {
    const full = [this.out, this.err].find((s) => (s.writableLength ?? 0) > HIGH_WATER && s.once);
    return full ? new Promise<void>((resolve) => full.once!('drain', resolve)) : undefined;
  }

  /** Clears the status line; called before the process exits. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.clearStatus();
  }

  private say(line: string): void {
    this.clearStatus();
    // Messages carry step-made text (file names, summaries, errors): nothing that drives the terminal, and a
    // message of several lines (git's on a failed push) indented after its first, so none poses as a line of ours.
    this.err.write(`${visibleMessage(line, 'runner: ')}\n`);
    this.drawStatus();
  }

  private drawStatus(): void {
    if (!this.live || !this.current.size) return;
    const now = Date.now();
    const all = [...this.current].map(([id, c]) => `${id} ${formatDuration(now - c.since)}`);
    const [first] = this.current.values();
    const text = this.current.size === 1 ? `step ${all[0]} (${first!.index + 1}/${first!.total})` : `${this.current.size} steps: ${all.join(', ')}`;
    this.err.write(`\r\x1b[K⏵ ${text.slice(0, 200)}`);
    this.statusShown = true;
  }

  private clearStatus(): void {
    if (!this.statusShown) return;
    this.err.write('\r\x1b[K');
    this.statusShown = false;
  }
}
