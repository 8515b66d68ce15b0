/**
 * The tools `runner mcp` and runner serve's /mcp offer an agent: find
 * pipelines, start runs and agent tasks, follow them, read their diff, and
 * deliver or cancel them. Each is an operation of runs/ (the one the CLI and
 * the API call, with its checks: the run id, held here, the server's scope),
 * its arguments and answer translated here, never a copy of it.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { RunnerError } from '../common/errors.js';
import { loadPipeline } from '../pipeline/load.js';
import { summarize, type RunRecord } from '../run/record.js';
import { startAgentTask } from '../runs/agent-task.js';
import { cancelRunOf } from '../runs/cancel.js';
import { decideRunOf, forkRunOf, resumeRunOf } from '../runs/resume.js';
import { applyRunOf, mergeRunOf } from '../runs/deliver.js';
import { diffFilesOf, patchText } from '../runs/diff.js';
import { within } from '../runs/folders.js';
import { listRunsOf } from '../runs/list.js';
import { runLog, stepTranscript } from '../runs/logs.js';
import { previewDelivery } from '../runs/preview.js';
import { runView, showRun, type NotStarted } from '../runs/show.js';
import { startPipeline } from '../runs/start.js';
import { TASK_AGENTS } from '../runs/task-pipeline.js';
import type { McpBackend } from './backend.js';
import { answer, failure } from './tool-result.js';
import { waitForRun } from './wait.js';

const runId = z.string().min(1).max(200).describe('the run id, as start_run, start_agent_task or list_runs gave it');
const ENDED = new Set(['succeeded', 'failed', 'canceled', 'rejected', 'error', 'interrupted', 'not_started']);

type Result = ReturnType<typeof answer>;
/** A tool's body, its errors turned into tool errors. */
const guarded =
  <A, E>(fn: (args: A, extra: E) => Promise<unknown>) =>
  async (args: A, extra: E): Promise<Result> => {
    try {
      return answer(await fn(args, extra));
    } catch (err) {
      return failure(err);
    }
  };

export function registerTools(server: McpServer, b: McpBackend): void {
  const record = (id: string) => showRun(b, id);

  server.registerTool(
    'list_pipelines',
    {
      title: 'List pipelines',
      description:
        'The pipelines this server may run: each file under its pipelines folders, with its name, description and inputs (name, description, default; an input without a default must be given to start_run), or why the file is not usable. Start one with start_run.',
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async () => ({ pipelineFolders: b.pipelineDirs, projectFolders: b.projectDirs, pipelines: (await b.pipelines()).slice(0, 200) })),
  );

  server.registerTool(
    'validate_pipeline',
    {
      title: 'Validate a pipeline file',
      description:
        'Checks one pipeline file under the pipelines folders, as `runner validate` does: valid with its name, inputs and steps, or each problem with its line. Takes the file path list_pipelines gave (or one relative to the first pipelines folder).',
      inputSchema: { file: z.string().min(1).max(4096).describe('the pipeline file: a path under a pipelines folder') },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async ({ file }: { file: string }) => {
      const real = await within(file, b.pipelineDirs, 'pipeline file', '--pipelines');
      try {
        const l = await loadPipeline(real);
        return { valid: true, file: real, name: l.pipeline.name, inputs: l.pipeline.inputs ?? {}, steps: l.pipeline.steps.map((s) => s.id) };
      } catch (err) {
        if (!(err instanceof RunnerError) || err.code !== 'pipeline_invalid') throw err;
        return { valid: false, file: real, errors: err.message.split('\n').slice(0, 100) };
      }
    }),
  );

  server.registerTool(
    'start_run',
    {
      title: 'Start a run of a pipeline',
      description:
        'Starts a run of one of the pipelines list_pipelines gives (by its name or its file), with values for its inputs. Every step runs in its own container on a worktree of the project; the project itself is not touched until merge_run or apply_run. Answers the run id at once: follow it with wait_for_run, run_status and run_log.',
      inputSchema: {
        pipeline: z.string().min(1).max(4096).describe('the pipeline\'s name or file, as list_pipelines gives them'),
        inputs: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional().describe('values for the pipeline\'s inputs, by name; the rest take their defaults'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    },
    guarded(async ({ pipeline, inputs }: { pipeline: string; inputs?: Record<string, string | number | boolean> | undefined }) => {
      const r = await startPipeline(b, pipeline, inputs ?? {}, b.startedBy);
      return { ...r, next: 'wait_for_run to wait for it, run_status for its steps' };
    }),
  );

  server.registerTool(
    'start_agent_task',
    {
      title: 'Start an agent task on a project',
      description:
        'Hands a task to a coding agent (claude-code, codex or opencode) that works on a project in a sandbox: its own container, a worktree on a new branch (run/<id>), the model key kept out of its reach. With verify, a command (like "npm test") runs after the agent, and merge_run refuses the run unless it passed. The project must lie under the server\'s project folders. Answers the run id at once: wait_for_run, then run_diff, then merge_run.',
      inputSchema: {
        project: z.string().min(1).max(4096).describe('the project folder (a git repository), absolute or relative to the first project folder'),
        prompt: z.string().min(1).max(100_000).describe('what the agent is to do, as you would tell it'),
        agent: z.enum(TASK_AGENTS).default('claude-code').describe('the agent CLI that does the work'),
        verify: z.string().min(1).max(4000).optional().describe('a shell command that checks the work in the project (like "npm ci && npm test"); the run is deliverable only when it passes'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    },
    guarded(async (args: { project: string; prompt: string; agent: (typeof TASK_AGENTS)[number]; verify?: string | undefined }) => startAgentTask(b, args)),
  );

  server.registerTool(
    'run_status',
    {
      title: 'A run\'s status and steps',
      description:
        'Where a run stands: queued, starting, running, awaiting_approval (at a gate: its prompt and deadline), succeeded, failed, canceled, rejected, error, interrupted or not_started (with why); its branch, every step of its pipeline with its state (plan), each step\'s status, exit code and duration, an agent step\'s final message and what it used, and whether it was delivered.',
      inputSchema: { run_id: runId },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async ({ run_id }: { run_id: string }) => {
      const v = await runView(b, run_id);
      return { ...status(v), plan: v.plan };
    }),
  );

  server.registerTool(
    'run_log',
    {
      title: 'A run\'s log',
      description:
        'What the run\'s steps printed (masked: no secret appears), each line marked with its step. Without cursor: the last `tail` lines. Every answer has a cursor: pass it back to get only the lines written since (with more: true, ask again at once for the rest).',
      inputSchema: {
        run_id: runId,
        step: z.string().min(1).max(200).optional().describe('only this step\'s log'),
        tail: z.number().int().min(1).max(1000).default(100).describe('how many of the last lines, without cursor'),
        cursor: z.string().max(100_000).optional().describe('the cursor of an earlier run_log answer'),
        max_bytes: z.number().int().min(1000).max(100_000).default(32_000).describe('at most about this many bytes of log'),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async ({ run_id, step, tail, cursor, max_bytes }: { run_id: string; step?: string | undefined; tail: number; cursor?: string | undefined; max_bytes: number }) =>
      runLog(b, run_id, { step, tail, cursor, maxBytes: max_bytes }),
    ),
  );

  server.registerTool(
    'step_transcript',
    {
      title: 'An agent step\'s transcript',
      description:
        'An agent step\'s events, in one shape whichever CLI ran (kind: start, message, tool_call, tool_result, task_end, files, usage, final, retry, notice, error; wrapUp: true after the work), from event `from` on, at most `max_lines`. Only steps that run an agent preset have one. next_from continues where this answer stopped.',
      inputSchema: {
        run_id: runId,
        step: z.string().min(1).max(200).describe('the agent step\'s id, as run_status names it'),
        from: z.number().int().min(0).default(0).describe('the first event to read (0: the start)'),
        max_lines: z.number().int().min(1).max(500).default(50),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async ({ run_id, step, from, max_lines }: { run_id: string; step: string; from: number; max_lines: number }) => stepTranscript(b, run_id, step, from, max_lines)),
  );

  server.registerTool(
    'run_diff',
    {
      title: 'A run\'s change',
      description:
        'The run\'s change against the commit it started from. Without file: the list of changed files (path, status, lines added and removed). With file: that file\'s part of the patch. With patch: true, the whole patch, up to max_bytes. Read it before merge_run.',
      inputSchema: {
        run_id: runId,
        file: z.string().min(1).max(4096).optional().describe('one changed file\'s path, as the file list gives it'),
        patch: z.boolean().default(false).describe('the whole patch (bounded by max_bytes) rather than the file list'),
        max_bytes: z.number().int().min(1000).max(100_000).default(32_000),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async ({ run_id, file, patch, max_bytes }: { run_id: string; file?: string | undefined; patch: boolean; max_bytes: number }) => {
      if (file !== undefined) return { runId: run_id, file, ...(await patchText(b, run_id, { file, maxBytes: max_bytes })) };
      if (patch) return { runId: run_id, ...(await patchText(b, run_id, { maxBytes: max_bytes })) };
      const { files, total } = await diffFilesOf(b, run_id);
      return { runId: run_id, total, files: files.slice(0, 500), ...(files.length > 500 ? { more: files.length - 500 } : {}) };
    }),
  );

  server.registerTool(
    'wait_for_run',
    {
      title: 'Wait for a run to end',
      description:
        'Waits until the run ends, stops at an approval gate (status awaiting_approval: a person decides, with approve_run or reject_run), or timeout_seconds pass, whichever is first, sending progress notifications meanwhile; answers its status (ended: true once it ended). Call it again while ended is false and it is not awaiting_approval; do not poll run_status in a loop.',
      inputSchema: { run_id: runId, timeout_seconds: z.number().int().min(1).max(300).default(50).describe('how long to wait at most (keep it under your client\'s tool-call timeout)') },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async ({ run_id, timeout_seconds }: { run_id: string; timeout_seconds: number }, extra: WaitExtra) => {
      // a run at a gate nobody decided yet waits for a person, not for time: said at once (an approved one goes on)
      const r = await waitForRun(() => record(run_id), (x) => ENDED.has(x.status) || undecidedGate(x), timeout_seconds * 1000, extra);
      return {
        ended: ENDED.has(r.status),
        ...status(r),
        ...(undecidedGate(r) ? { next: 'the run waits for a person at its gate: show the user its prompt and run_diff, and approve_run or reject_run only as they say' } : {}),
      };
    }),
  );

  server.registerTool(
    'merge_run',
    {
      title: 'Merge a run into its project',
      description:
        'CHANGES THE USER\'S PROJECT: merges the run\'s branch into the project\'s branch (`into`, default the branch the run started from) with a merge commit (or one squashed commit), moving the checkout when that branch is checked out and clean. Refused, changing nothing, when the run did not succeed, its verify steps did not pass, it touched paths it may not, the checkout has uncommitted changes, or the merge conflicts: the answer says which and what to do. Read run_diff first, and ask the user.',
      inputSchema: {
        run_id: runId,
        into: z.string().min(1).max(250).optional().describe('the branch to merge into (default: the one the run started from)'),
        squash: z.boolean().default(false).describe('one commit rather than a merge commit'),
        allow_empty: z.boolean().default(false).describe('merge even when the run brings no change to the target (its change is there already); refused otherwise, saying so'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    guarded(async ({ run_id, into, squash, allow_empty }: { run_id: string; into?: string | undefined; squash: boolean; allow_empty: boolean }) => {
      const r = await mergeRunOf(b, run_id, { into, squash, allowEmpty: allow_empty }, b.deliveredBy);
      return { merged: true, runId: run_id, project: r.rec.project, branch: r.rec.branch, into: r.into, commit: r.commit, squash, movedCheckout: r.movedCheckout, author: r.author };
    }),
  );

  server.registerTool(
    'apply_run',
    {
      title: 'Apply a run to its project, uncommitted',
      description:
        'CHANGES THE USER\'S PROJECT: writes the run\'s change into the project\'s checkout as uncommitted changes, for the user to review and commit. Refused, changing nothing, for the same reasons as merge_run (a run that did not succeed, failed verify steps, a dirty checkout, a patch that does not apply). Ask the user first.',
      inputSchema: { run_id: runId },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    guarded(async ({ run_id }: { run_id: string }) => {
      const r = await applyRunOf(b, run_id, b.deliveredBy);
      return { applied: true, runId: run_id, project: r.rec.project, files: r.files.slice(0, 500) };
    }),
  );

  server.registerTool(
    'cancel_run',
    {
      title: 'Cancel a run',
      description:
        'Cancels a run this server started and is running or holds queued: the step running is stopped, its work so far committed on the run\'s branch, the run recorded canceled. The project is not touched.',
      inputSchema: { run_id: runId },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    guarded(async ({ run_id }: { run_id: string }) => ({ ...(await cancelRunOf(b, run_id)), next: 'wait_for_run to see it end' })),
  );

  for (const [name, decision] of [['approve_run', 'approved'], ['reject_run', 'rejected']] as const) {
    server.registerTool(
      name,
      {
        title: decision === 'approved' ? 'Approve a run waiting at a gate' : 'Reject a run waiting at a gate',
        description:
          decision === 'approved'
            ? 'A PERSON\'S DECISION: approves a run waiting at an approval gate (status awaiting_approval), so it goes on with the steps after the gate (which may cost money). The comment reaches those steps as $RUNNER_APPROVAL_COMMENT. Ask the user first; show them the gate\'s prompt (run_status) and the run\'s diff (run_diff).'
            : 'A PERSON\'S DECISION: rejects a run waiting at an approval gate: the run ends rejected, its work kept on its branch. Ask the user first.',
        inputSchema: { run_id: runId, comment: z.string().max(8000).optional() },
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      guarded(async ({ run_id, comment }: { run_id: string; comment?: string | undefined }) => ({
        ...(await decideRunOf(b, run_id, decision, { comment: comment ?? '', by: b.deliveredBy })),
        next: decision === 'approved' ? 'wait_for_run to see it end' : 'the run has ended',
      })),
    );
  }

  server.registerTool(
    'resume_run',
    {
      title: 'Resume a run',
      description:
        'Goes on with a failed, interrupted, canceled or approved run from its first step that did not complete, on its own branch: the steps it completed are not run again (nor paid for again), and its budget counts what it spent. Refused, with the difference, if its pipeline file changed since (accept_changed_pipeline: true takes the file as it is now).',
      inputSchema: { run_id: runId, accept_changed_pipeline: z.boolean().optional() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    guarded(async ({ run_id, accept_changed_pipeline }: { run_id: string; accept_changed_pipeline?: boolean | undefined }) => ({
      ...(await resumeRunOf(b, run_id, { acceptChanged: accept_changed_pipeline === true, by: b.deliveredBy })),
      next: 'wait_for_run to see it end',
    })),
  );

  server.registerTool(
    'fork_run',
    {
      title: 'Fork a run from a step',
      description:
        'Starts a new run whose branch begins where the given run was just before step `from`, with the outputs of the steps before it; it runs that step and what follows (the pipeline file as it is now: change a prompt and fork to try a step again). Both runs stay, each with its diff and cost.',
      inputSchema: { run_id: runId, from: z.string().min(1).max(200), inputs: z.record(z.string(), z.string()).optional() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    guarded(async ({ run_id, from, inputs }: { run_id: string; from: string; inputs?: Record<string, string> | undefined }) => ({
      ...(await forkRunOf(b, run_id, from, { ...(inputs ? { inputs } : {}), by: b.deliveredBy })),
      next: 'wait_for_run on the new run id',
    })),
  );

  server.registerTool(
    'list_runs',
    {
      title: 'List runs',
      description: 'Runs in the runner home, newest first (this server\'s queued and running ones before the rest): id, pipeline, status, branch, when, steps, cost. Filter by pipeline or status.',
      inputSchema: {
        pipeline: z.string().min(1).max(200).optional(),
        status: z.enum(['queued', 'starting', 'running', 'awaiting_approval', 'succeeded', 'failed', 'canceled', 'rejected', 'error', 'interrupted', 'not_started']).optional(),
        limit: z.number().int().min(1).max(100).default(20),
      },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async ({ pipeline, status: st, limit }: { pipeline?: string | undefined; status?: string | undefined; limit: number }) => ({
      runs: await listRunsOf(b, { pipeline: pipeline ?? null, status: st ?? null, limit }),
    })),
  );

  server.registerTool(
    'delivery_preview',
    {
      title: 'What a merge or apply would do',
      description: 'Before merge_run or apply_run: the project, the run\'s branch and the target, and whether the run is deliverable and why not. Changes nothing.',
      inputSchema: { run_id: runId },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guarded(async ({ run_id }: { run_id: string }) => previewDelivery(b, run_id)),
  );
}

type WaitExtra = Parameters<typeof waitForRun>[3];

/** A run waiting at a gate no decision was taken at since it began waiting. */
function undecidedGate(r: RunRecord | NotStarted): boolean {
  if (!('steps' in r) || r.status !== 'awaiting_approval' || !r.gate) return false;
  const gate = r.gate;
  return !r.decisions?.some((d) => d.step === gate.name && Date.parse(d.at) >= Date.parse(gate.since));
}

/** A run as run_status answers it: the --json summary, with where it came from and whether it was delivered. */
function status(r: RunRecord | NotStarted): Record<string, unknown> {
  if (!('steps' in r)) return { ...r };
  return {
    ...summarize(r),
    pipeline: r.pipeline,
    project: r.project,
    startedAt: r.startedAt,
    ...(r.gate ? { gate: r.gate } : {}),
    finishedAt: r.finishedAt,
    durationMs: r.durationMs,
    current: r.current,
    delivered: r.delivered,
    deliverable: r.status === 'succeeded' && !r.delivered && r.workspace !== 'persistent_directory' ? 'read run_diff, then merge_run or apply_run' : undefined,
  };
}
