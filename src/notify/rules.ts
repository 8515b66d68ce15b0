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

/**
 * An approval step's `notify: [names]` (at `path`): each must be an entry of
 * the top-level `notify:` map. For the gate's own rules to call.
 */
export function checkGateNotifyNames(notify: Record<string, unknown> | undefined, names: readonly string[], path: DocPath): NotifyRuleIssue[] {
  const known = Object.keys(notify ?? {});
  return names.flatMap((name, i) =>
    known.includes(name)
      ? []
      : [
          {
            path: [...path, i],
            message: known.length
              ? `notify entry ${JSON.stringify(name)} is not in the top-level notify: map (it has ${known.join(', ')})${didYouMean(name, known)}`
              : `notify entry ${JSON.stringify(name)} is not in the top-level notify: map, which this file does not have: add notify: { ${name}: { webhook: URL, on: [awaiting_approval] } }`,
          },
        ],
  );
}

/** The secrets the notify entries sign with, resolved before a run starts like a step's. */
export function notifySecrets(notify: Record<string, { secret?: string | undefined }> | undefined): string[] {
  return [...new Set(Object.values(notify ?? {}).flatMap((e) => (e.secret ? [e.secret] : [])))];
}
