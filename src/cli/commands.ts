/**
 * The commands, each loaded when run, and what main.ts needs to say an error. In the runner's bundle
 * (scripts/bundle.mjs) this module and all it loads are the CommonJS part (runner.cjs), which main.ts reaches
 * through bundled-commands.ts (compiled with V8's code cache); `runner --help` and `--version` load none of it.
 */
export type Command = (args: string[]) => Promise<number>;

export const COMMANDS: Record<string, () => Promise<Command>> = {
  exec: async () => (await import('./exec-command.js')).execCommand,
  approve: async () => (await import('./continue-commands.js')).approveCommand,
  reject: async () => (await import('./continue-commands.js')).rejectCommand,
  resume: async () => (await import('./continue-commands.js')).resumeCommand,
  fork: async () => (await import('./continue-commands.js')).forkCommand,
  validate: async () => (await import('./validate-command.js')).validateCommand,
  task: async () => (await import('./task-command.js')).taskCommand,
  runs: async () => (await import('./runs-command.js')).runsCommand,
  logs: async () => (await import('./logs-command.js')).logsCommand,
  diff: async () => (await import('./diff-command.js')).diffCommand,
  push: async () => (await import('./push-command.js')).pushCommand,
  apply: async () => (await import('./apply-command.js')).applyCommand,
  merge: async () => (await import('./merge-command.js')).mergeCommand,
  serve: async () => (await import('./serve-command.js')).serveCommand,
  mcp: async () => (await import('./mcp-command.js')).mcpCommand,
  gc: async () => (await import('./gc-command.js')).gcCommand,
  cache: async () => (await import('./cache-command.js')).cacheCommand,
  init: async () => (await import('./init-command.js')).initCommand,
  images: async () => (await import('./images-command.js')).imagesCommand,
};

/** What main.ts needs to end with an error: its exit code, and its text made safe to show. */
export async function errorTools() {
  const [{ exitCodeForError }, { visibleLines, visibleMessage }] = await Promise.all([import('./exit-codes.js'), import('../common/visible.js')]);
  return { exitCodeForError, visibleLines, visibleMessage };
}
