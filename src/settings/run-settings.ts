/**
 * Flags and environment → one RunSettings: where steps run (engine,
 * registry, the credentials images are pulled with), their sandbox (isolation), where their gateways reach out
 * (egress network, private ranges, DNS, the company's proxy), what the
 * company's network asks of every step (CA bundle: the host's own unless told
 * otherwise; mirrors) and where secrets
 * are read from. `runner exec`, `runner serve` and `runner mcp` each call
 * readSettings once, with the same flag table (flags.ts), and pass the result
 * through unchanged to every run they start. Read and checked before anything
 * starts; the CA bundle is the one file read.
 */
import path from 'node:path';
import type { Isolation } from '../pipeline/schema.js';
import type { CompanyNetwork } from '../plan/company-network.js';
import { readCompany } from './company.js';
import { readEgress, type EgressSettings } from './egress.js';
import { readEngine, type EngineSettings } from './engine.js';
import type { SettingsFlags } from './flags.js';
import { readIsolation } from './isolation.js';
import { readRegistryAuth } from './registry-auth.js';

export type { EgressSettings } from './egress.js';
export type { EngineSettings } from './engine.js';

export interface RunSettings {
  /** where steps run: the local engine or a swarm (and the registry its nodes pull from) */
  engine: EngineSettings;
  /** the sandbox of every step whose file does not name one; absent: runc */
  isolation?: Isolation;
  /** where steps' gateways reach out */
  egress: EgressSettings;
  /** the CA bundle and mirrors every step gets */
  company?: CompanyNetwork;
  /** the --secrets-file, as an absolute path (each door says how it mixes it with the environment) */
  secretsFile?: string;
  /** false: the door reads secrets from secretsFile alone, never from the environment (runner mcp); said when a secret is missing */
  secretsFromEnvironment?: boolean;
}

/** `warn`: what is allowed but likely not meant (a one-certificate bundle, an inherited proxy on loopback). */
export function readSettings(values: SettingsFlags, env: NodeJS.ProcessEnv = process.env, warn: (message: string) => void = () => undefined): RunSettings {
  const registryAuth = readRegistryAuth(values['registry-auth'], env);
  const engine = { ...readEngine(values, env), ...(registryAuth ? { registryAuth } : {}) };
  const egress = readEgress(values, env, warn);
  const company = readCompany(values, env, warn);
  const isolation = readIsolation(values.isolation, env);
  return {
    engine,
    ...(isolation ? { isolation } : {}),
    egress,
    ...(company ? { company } : {}),
    ...(values['secrets-file'] ? { secretsFile: path.resolve(values['secrets-file']) } : {}),
  };
}

/** The settings of a machine that sets nothing and has no CA bundle of its own: the local engine, runc, bridge, no proxy, no CA. For tests. */
export function defaultSettings(): RunSettings {
  return readSettings({}, { RUNNER_HOST_CA_BUNDLE: 'none' });
}
