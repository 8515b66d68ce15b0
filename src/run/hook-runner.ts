/** Runs a pipeline's hooks for one run: records each in run.json, logs its output, tells the console. */
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { formatDuration } from '../common/durations.js';
import type { Masker } from '../common/mask.js';
import type { PipelineFile } from '../pipeline/schema.js';
import type { Workspace } from '../workspace/workspace.js';
import { DEFAULT_HOOK_TIMEOUT_MS, hookEnv, runHook, type HookName } from './hooks.js';
import type { RunRecord } from './record.js';
import type { Reporter } from './reporter.js';
import type { RunStore } from './store.js';

export class HookRunner {
  constructor(
    private readonly hooks: PipelineFile['hooks'],
    private readonly ws: Workspace,
    private readonly record: RunRecord,
    private readonly store: RunStore,
    private readonly masker: Masker,
    private readonly reporter: Reporter,
  ) {}

  /** True when the hook passed or there is none. */
  async run(name: HookName): Promise<boolean> {
    const script = this.hooks?.[name];
    if (!script || !script.trim()) return true;
    const timeoutMs = this.hooks?.timeout ?? DEFAULT_HOOK_TIMEOUT_MS;
    this.reporter.info(`hook ${name}: running`);
    const r = await runHook({
      name,
      script,
      cwd: this.ws.path,
      timeoutMs,
      user: this.ws.owner,
      env: hookEnv(
        {
          RUNNER_RUN_ID: this.record.runId,
          RUNNER_WORKSPACE: this.ws.path,
          RUNNER_TASK_RUN: String(this.ws.attempt),
          // the name hooks had for it first (a hook runs once per run, not per step attempt)
          RUNNER_ATTEMPT: String(this.ws.attempt),
          RUNNER_TASK_ID: this.record.taskId ?? '',
          RUNNER_PIPELINE: this.record.pipeline,
          RUNNER_BRANCH: this.ws.branch ?? '',
        },
        this.ws.owner,
      ),
    });
    const output = this.masker.mask(r.output);
    await appendFile(path.join(this.store.dir, 'hooks.log'), output ? `== ${name}\n${output.replace(/\n?$/, '\n')}` : `== ${name}\n`);
    for (const line of output.split('\n').filter(Boolean).slice(0, 200)) this.reporter.stepLine(`hook:${name}`, 'stdout', line);
    this.record.hooks.push({ name, ok: r.ok, exitCode: r.exitCode, timedOut: r.timedOut, durationMs: r.durationMs, outputCut: r.cut });
    this.store.event('hook', { name, ok: r.ok, exitCode: r.exitCode, timedOut: r.timedOut, durationMs: r.durationMs });
    const how = r.timedOut ? `timed out after ${formatDuration(timeoutMs)} (its processes were killed)` : `exited ${r.exitCode}`;
    if (r.ok) this.reporter.info(`hook ${name}: done in ${formatDuration(r.durationMs)}`);
    else if (name === 'after_run' || name === 'before_remove') this.reporter.warn(`hook ${name} ${how}; ignored`);
    else this.reporter.warn(`hook ${name} ${how}`);
    return r.ok;
  }
}
