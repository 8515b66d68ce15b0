/**
 * The pipeline file's `notify:` map: name → a webhook the runner POSTs to when
 * a run reaches one of the statuses its `on:` names. Pure (zod).
 */
import { z } from 'zod';

/**
 * What a notification can be about. `budget_exhausted` and `timed_out` are runs
 * that failed because a step spent the budget or ran out of time (`failed` names
 * them too); `awaiting_approval` is a run waiting at an approval gate, `rejected`
 * one a gate ended (someone rejected it, or its timeout passed); `interrupted`
 * is accepted, and sent once recovery sends notifications.
 */
export const NOTIFY_STATUSES = ['succeeded', 'failed', 'budget_exhausted', 'timed_out', 'canceled', 'error', 'interrupted', 'awaiting_approval', 'rejected'] as const;
export type NotifyStatus = (typeof NOTIFY_STATUSES)[number];

/** Why a webhook URL is refused, or undefined: http(s) only, no user or password in it (a secret goes in `secret:`). */
export function webhookUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `expected a URL like https://hooks.example.com/runner, not ${JSON.stringify(url)}`;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return `expected an http:// or https:// URL, not ${u.protocol}: a webhook is POSTed to`;
  if (u.username || u.password) {
    return 'a webhook URL cannot hold a user or password (they would be written wherever the file is): drop them, and sign the body with secret: NAME (one of secrets:)';
  }
  return undefined;
}

export const notifyEntrySchema = z.strictObject({
  webhook: z.string().superRefine((url, ctx) => {
    const problem = webhookUrlProblem(url);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  /** the secret (one of secrets:) each body is signed with */
  secret: z.string().optional(),
  on: z
    .array(z.enum(NOTIFY_STATUSES, { error: (i) => `unknown status ${JSON.stringify(i.input)}: expected one of ${NOTIFY_STATUSES.join(', ')}` }))
    .min(1, `expected at least one status, like on: [failed, succeeded] (one of ${NOTIFY_STATUSES.join(', ')})`),
  /** json (the default): the runner's body; slack: a Slack-compatible incoming-webhook body ({ text }) */
  format: z.enum(['json', 'slack'], { error: 'expected format: json or format: slack' }).default('json'),
});

export const NOTIFY_KEYS = Object.keys(notifyEntrySchema.shape);

export const notifySchema = z.record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected a notify name of letters, digits, ".", "_" and "-"'), notifyEntrySchema);

export type NotifyEntry = z.output<typeof notifyEntrySchema>;
export type NotifyFile = z.output<typeof notifySchema>;
