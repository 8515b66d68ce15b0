/**
 * The spec's variables (`${containerWorkspaceFolder}`, `${localEnv:X}`, ...) resolved as the runner has them: the
 * workspace is where the runner mounts it (both the container's and the "local" folder point there: a step knows no
 * host path), `${localEnv:X}` is never the runner's own environment (a step gets only what its pipeline names), only
 * its default when one is written. Pure.
 */
import path from 'node:path';

export interface VariableContext {
  /** where the step's workspace is in its container */
  workspace: string;
  /** the project folder's name, for the Basename variables */
  projectName: string;
  /** the image's environment and containerEnv, for `${containerEnv:X}` */
  containerEnv: Readonly<Record<string, string>>;
  /** the preparation's key */
  devcontainerId: string;
}

/**
 * Replaces the variables in `text`; `unknown` gets each variable the runner leaves as it is, `emptied` each
 * `${localEnv:X}` with no default, made empty (to say so once each).
 */
export function resolveVariables(text: string, ctx: VariableContext, unknown?: (name: string) => void, emptied?: (name: string) => void): string {
  return text.replace(/\$\{([^}]+)\}/g, (whole, body: string) => {
    const [kind, name, ...rest] = body.split(':');
    const fallback = rest.length ? rest.join(':') : '';
    switch (kind) {
      case 'containerWorkspaceFolder':
      case 'localWorkspaceFolder':
        return ctx.workspace;
      case 'containerWorkspaceFolderBasename':
        return path.posix.basename(ctx.workspace);
      case 'localWorkspaceFolderBasename':
        return ctx.projectName;
      case 'devcontainerId':
        return ctx.devcontainerId;
      case 'localEnv':
      case 'env':
        if (name === undefined) return whole;
        if (!rest.length) emptied?.(whole);
        return fallback;
      case 'containerEnv':
        return name !== undefined ? (ctx.containerEnv[name] ?? fallback) : whole;
      default:
        unknown?.(whole);
        return whole;
    }
  });
}

/** Each value of `env` resolved. */
export function resolveEnv(env: Readonly<Record<string, string>>, ctx: VariableContext, unknown?: (name: string) => void, emptied?: (name: string) => void): Record<string, string> {
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, resolveVariables(v, ctx, unknown, emptied)]));
}
