/**
 * What a step whose gateway inspects TLS trusts: the roots it trusts anyway
 * (the company's bundle when --ca-file gave one, else the runner machine's
 * system bundle) and the gateway's own CA, made for that gateway alone. The
 * bundle travels the way the company's does (src/plan/company-network.ts):
 * at CA_PATH and the system bundle's path, named by the usual variables.
 * Pure.
 */
import { caEnv, CA_PATH, SYSTEM_BUNDLE_PATH } from './company-network.js';

/** The roots plus the gateway's CA, one PEM text; `roots` undefined: the gateway's CA alone (the runner machine has no system bundle). */
export function trustBundle(gatewayCa: string, roots: string | undefined): string {
  const ca = gatewayCa.trim();
  return roots?.trim() ? `${roots.trimEnd()}\n${ca}\n` : `${ca}\n`;
}

/** What the step's container gets: the bundle mounted (a local engine) or handed in (swarm) at both paths, and the variables under the step's own env. */
/** the name a step's trust bundle (its gateway's CA) starts with, in the home's network directory: a file per step (run/step-addons/gateway.ts) */
export const GATEWAY_CA_FILE_PREFIX = 'gateway-ca-';

export function trustPart(bundle: string, hostPath: string): {
  mounts: Array<{ source: string; target: string; readOnly: boolean }>;
  files: Array<{ target: string; data: string; secret: boolean }>;
  envDefaults: Record<string, string>;
} {
  return {
    mounts: [CA_PATH, SYSTEM_BUNDLE_PATH].map((target) => ({ source: hostPath, target, readOnly: true })),
    files: [CA_PATH, SYSTEM_BUNDLE_PATH].map((target) => ({ target, data: bundle, secret: false })),
    envDefaults: caEnv(),
  };
}
