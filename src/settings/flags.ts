/**
 * The flags of the run settings: one table that `runner exec`, `runner serve`
 * and `runner mcp` all take, so no door can leave one out. Each flag has an
 * environment variable that stands in for it (run-settings.ts reads both).
 */
export const SETTINGS_FLAGS = {
  engine: { type: 'string' },
  registry: { type: 'string' },
  isolation: { type: 'string' },
  'egress-network': { type: 'string' },
  'egress-private': { type: 'string' },
  'egress-proxy': { type: 'string' },
  'ca-file': { type: 'string' },
  'npm-registry': { type: 'string' },
  'pip-index': { type: 'string' },
  'secrets-file': { type: 'string' },
  'registry-auth': { type: 'string' },
} as const;

/** The values parseArgs gives for SETTINGS_FLAGS (any of them may be absent). */
export type SettingsFlags = { [K in keyof typeof SETTINGS_FLAGS]?: string | undefined };
