/**
 * The lifecycle commands that prepare an image (onCreateCommand, updateContentCommand, postCreateCommand, in the
 * spec's order, the named commands of one key one after another) as one /bin/sh script, each said as it starts and
 * stopping at the first that fails. Pure.
 */
import { shellQuote } from '../../common/shell-word.js';
import { PREPARING_COMMANDS, type DevcontainerConfig, type LifecycleCommand } from './config.js';


function commandLine(c: LifecycleCommand): string {
  return c.kind === 'shell' ? `/bin/sh -c ${shellQuote(c.script)}` : c.argv.map(shellQuote).join(' ');
}

/** The script, or undefined when the file has no preparing command. `resolve` fills in the spec's variables. */
export function preparationScript(config: DevcontainerConfig, resolve: (text: string) => string = (t) => t): string | undefined {
  const parts: string[] = [];
  for (const key of PREPARING_COMMANDS) {
    for (const { name, command } of config.lifecycle[key]) {
      const label = name ? `${key} ${name}` : key;
      const resolved: LifecycleCommand = command.kind === 'shell' ? { kind: 'shell', script: resolve(command.script) } : { kind: 'argv', argv: command.argv.map(resolve) };
      parts.push(`echo ${shellQuote(`▶ ${label}`)}`, `${commandLine(resolved)} || { echo ${shellQuote(`✗ ${label} failed`)} >&2; exit 1; }`);
    }
  }
  return parts.length ? ['set -e', ...parts].join('\n') : undefined;
}

/**
 * What the preparing commands left in the steps' HOME (`home`: a cache, a tool's settings), given to every user: a
 * step runs as another uid than they did (the project's owner, never root), and must read and write there. Only what
 * the preparing user owns, never through a symbolic link, never the workspace (thrown away with the container). Pure.
 */
export function homeHandOver(home: string, workspace: string): string {
  return `find ${shellQuote(home)} -mindepth 1 -path ${shellQuote(workspace)} -prune -o ! -type l -user "$(id -u)" -exec chmod a+rwX {} + 2>/dev/null || true`;
}
