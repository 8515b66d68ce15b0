/** `--warm N` (else RUNNER_WARM) of runner serve and runner exec: how many step gateways to keep made ahead (src/gateway/host/gateway-pool.ts), on any engine (a swarm's on its manager). Pure. */
import { UsageError } from '../common/errors.js';

export const MAX_WARM = 16;

export function parseWarm(command: string, text: string | undefined): number {
  if (text === undefined || text === '') return 0;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > MAX_WARM) throw new UsageError(`${command}: --warm takes how many step gateways to keep made ahead, 0 to ${MAX_WARM}, got "${text}"`);
  return n;
}
