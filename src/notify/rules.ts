/** The `notify:` map's references across the file: a `secret:` must be one of `secrets:`. Pure. */
import { didYouMean } from '../common/did-you-mean.js';
import type { DocPath } from '../pipeline/positions.js';

export interface NotifyRuleIssue {
  path: DocPath;
  message: string;
}

export function checkNotifyRules(p: { secrets?: string[] | undefined; notify?: Record<string, { secret?: string | undefined }> | undefined }): NotifyRuleIssue[] {
  const declared = p.secrets ?? [];
  const issues: NotifyRuleIssue[] = [];
  for (const [name, entry] of Object.entries(p.notify ?? {})) {
    if (entry.secret === undefined || declared.includes(entry.secret)) continue;
    issues.push({
      path: ['notify', name, 'secret'],
      message: `secret ${entry.secret} is not declared in the top-level secrets: list: add it there (secrets: [${[...declared, entry.secret].join(', ')}])${didYouMean(entry.secret, declared)}`,
    });
  }
  return issues;
}

/** The secrets the notify entries sign with, resolved before a run starts like a step's. */
export function notifySecrets(notify: Record<string, { secret?: string | undefined }> | undefined): string[] {
  return [...new Set(Object.values(notify ?? {}).flatMap((e) => (e.secret ? [e.secret] : [])))];
}
