/**
 * Local features (a folder of the project with devcontainer-feature.json and install.sh) as the spec installs them:
 * each copied into the image and its install.sh run as root during the build, its options as environment variables
 * (the option's id made a variable name, its default from devcontainer-feature.json unless the file gives a value),
 * its containerEnv set on the image. Pure: the feature's metadata in, the Dockerfile's text out.
 */
import { shellQuote } from '../../common/shell-word.js';

export interface FeatureMetadata {
  id?: string;
  options?: Record<string, { default?: string | boolean } | undefined>;
  containerEnv?: Record<string, string>;
}

/** A feature ready to install: its folder's place in the build's context, and its environment. */
export interface PreparedFeature {
  /** as the file names it */
  id: string;
  /** inside the build's context */
  dir: string;
  env: Record<string, string>;
  containerEnv: Record<string, string>;
}

/** The spec's name for an option's variable: not a word character becomes `_`, leading digits and `_` one `_`, upper case. */
export function optionVariable(id: string): string {
  return id.replace(/[^\w_]/g, '_').replace(/^[\d_]+/g, '_').toUpperCase();
}

/** The feature's option variables: the file's values over the metadata's defaults. */
export function featureEnv(meta: FeatureMetadata, given: Readonly<Record<string, string | boolean>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [id, opt] of Object.entries(meta.options ?? {})) if (opt?.default !== undefined) env[optionVariable(id)] = String(opt.default);
  for (const [id, v] of Object.entries(given)) env[optionVariable(id)] = String(v);
  return env;
}

/** The env file a feature's install.sh is given (sourced with `set -a`). */
export function envFile(env: Readonly<Record<string, string>>): string {
  return Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}\n`).join('');
}

/**
 * The Dockerfile that installs `features` on `base`, in order, as root, makes the steps' HOME (`home`: every step has
 * it, whatever its uid, as on the runner's images: writable by all, like /tmp), then gives the image its user back.
 * `users`: the spec's builtin variables (_REMOTE_USER, _CONTAINER_USER) for install.sh.
 */
export function featuresDockerfile(base: string, features: readonly PreparedFeature[], baseUser: string, users: { remote: string; container: string }, home: string): string {
  const lines = [`FROM ${base}`, 'USER root'];
  features.forEach((f, i) => {
    const dest = `/tmp/runner-features/${i}`;
    lines.push(`COPY ${f.dir}/ ${dest}/`);
    lines.push(
      `RUN cd ${dest} && export _REMOTE_USER=${shellQuote(users.remote)} _CONTAINER_USER=${shellQuote(users.container)} && set -a && . ./devcontainer-features.env && set +a && chmod +x ./install.sh && ./install.sh`,
    );
    for (const [k, v] of Object.entries(f.containerEnv)) if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) lines.push(`ENV ${k}=${JSON.stringify(v)}`);
  });
  if (features.length) lines.push('RUN rm -rf /tmp/runner-features');
  lines.push(`RUN mkdir -p ${shellQuote(home)} && chmod 1777 ${shellQuote(home)}`);
  if (baseUser) lines.push(`USER ${baseUser}`);
  return `${lines.join('\n')}\n`;
}
