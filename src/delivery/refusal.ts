/** Why a delivery was refused. A refusal changes nothing and says how to proceed. */
import { RunnerError } from '../common/errors.js';

export type RefusalReason =
  | 'target_dirty'
  | 'target_checked_out'
  | 'verification_failed'
  | 'patch_invalid'
  | 'scope_violation'
  | 'conflict'
  | 'work_not_recorded'
  | 'not_deliverable';

export class DeliveryRefused extends RunnerError {
  constructor(
    readonly reason: RefusalReason,
    message: string,
    /** the paths or steps behind the refusal */
    readonly details: string[] = [],
  ) {
    super(reason, `refused (${reason}): ${message}`);
  }
}
