/**
 * `image: devcontainer`: the project's dev container made into the image its steps run in, once per content. The
 * image (pulled) or the Dockerfile (built by the engine), then the local features (installed in a build), then the
 * preparing lifecycle commands (run in a container of that image, sandboxed like a step, and committed as a layer);
 * the result is tagged by a hash of everything it came from, so a second run finds it and prepares nothing.
 */
import { pidAlive } from '../../common/pid-alive.js';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ContainerError, PipelineError, errorMessage } from '../../common/errors.js';
import { LineSplitter } from '../../common/line-splitter.js';
import type { ContainerRuntime, ContainerSpec, Mount } from '../runtime.js';
import { readDevcontainerConfig, type ConfigReading, type DevcontainerConfig } from './config.js';
import { hashEntries, insideProject, listContext, matchesSources, packContext, readProjectFile, type ContextEntry } from './context.js';
import { dockerfileBases, dockerfileSources } from './dockerfile-sources.js';
import { envFile, featureEnv, featuresDockerfile, type FeatureMetadata, type PreparedFeature } from './features.js';
import { homeHandOver, preparationScript } from './script.js';
import { resolveEnv, resolveVariables, type VariableContext } from './variables.js';

export { DEVCONTAINER_IMAGE } from './config.js';
/** The repository the prepared images are tagged in (never runner/: those are the runner's own). */
export const PREPARED_REPOSITORY = 'runner-devcontainer';
/** Changed when what the preparation does changes: every image is prepared again. */
const RECIPE = 'runner-devcontainer/2';
export const DEVCONTAINER_LABEL = 'dev.runner.devcontainer';
/** On what a preparation runs (its container, its gateway and network): the runner process that made them. */
export const PREPARER_PID_LABEL = 'dev.runner.devcontainer-pid';

/** The labels of what this process runs to prepare (never kept in the image: the commit resets them). */
export function preparingLabels(): Record<string, string> {
  return { [DEVCONTAINER_LABEL]: 'prepare', [PREPARER_PID_LABEL]: String(process.pid) };
}

/**
 * What a preparation left when its runner died (a crash, a kill): its containers, gateways and networks, found by
 * their labels, removed when the process that made them is gone. Another runner preparing right now keeps its own.
 */
export async function removeLeftovers(runtime: ContainerRuntime): Promise<number> {
  const list = await runtime.listByLabels({ [DEVCONTAINER_LABEL]: 'prepare' });
  const dead = [...new Set(list.map((c) => c.labels[PREPARER_PID_LABEL]).filter((pid): pid is string => !!pid && !pidAlive(Number(pid))))];
  let n = 0;
  for (const pid of dead) {
    const labels = { [DEVCONTAINER_LABEL]: 'prepare', [PREPARER_PID_LABEL]: pid };
    n += await runtime.removeByLabels(labels);
    await runtime.removeNetworksByLabels(labels);
  }
  return n;
}


export interface FoundConfig {
  /** the file, absolute */
  file: string;
  /** where its relative paths start (its folder) */
  folder: string;
  text: string;
  reading: ConfigReading;
}

/** The project's `.devcontainer/devcontainer.json`, else `.devcontainer.json`; undefined when it has neither. */
export async function findDevcontainer(project: string): Promise<FoundConfig | undefined> {
  for (const rel of ['.devcontainer/devcontainer.json', '.devcontainer.json']) {
    if (!existsSync(path.join(project, rel))) continue;
    const file = await insideProject(project, rel, 'the dev container file');
    const text = await readProjectFile(file, 'the dev container file');
    return { file, folder: path.dirname(file), text, reading: readDevcontainerConfig(text) };
  }
  return undefined;
}

/** The config, or a PipelineError listing its refused keys with their lines (as `runner validate` prints them). */
export async function loadDevcontainer(project: string): Promise<FoundConfig & { config: DevcontainerConfig }> {
  const found = await findDevcontainer(project);
  if (!found) throw new ContainerError('devcontainer_missing', `image: devcontainer, and the project (${project}) has no .devcontainer/devcontainer.json or .devcontainer.json: add one, or name an image`);
  if (!found.reading.config) throw new PipelineError(found.file, found.reading.errors.map((e) => ({ path: e.key, message: e.message, line: e.line, col: e.col })));
  return { ...found, config: found.reading.config };
}

/** The preparing commands' way out when the file allows hosts (egress:): a gateway of their own, opened only when they run. */
export interface PreparingWay {
  network: string;
  dns?: string[];
  hosts?: Record<string, string>;
  /** the commands begin once it resolves (the gateway listens) */
  up?: Promise<void>;
  /** the proxy variables: given to the commands' processes only, never kept in the image */
  env: Record<string, string>;
  close(): Promise<void>;
}

export interface PrepareOptions {
  project: string;
  /** where a step's workspace is in its container: the spec's workspace variables point there */
  workspace: string;
  /** a step's HOME: made in the image, writable by all; the preparing commands' HOME too, so what they leave there a step finds */
  home: string;
  /** limits and the network for the preparing commands (a step's: the first step that runs in the dev container) */
  sandbox: Pick<ContainerSpec, 'memoryBytes' | 'cpus' | 'pids' | 'openFiles' | 'fileSizeBytes' | 'network'> & { timeoutMs: number };
  /** the gateway to run the preparing commands behind, instead of `sandbox.network` */
  openWay?: () => Promise<PreparingWay>;
  /**
   * What the company's network gives the preparing commands, as it gives a step: its CA bundle mounted (never
   * committed into the image: a mount is not a layer) and the variables pointing the usual tools at it and the
   * mirrors (through the prelude, so they stay out of the image's config)
   */
  company?: { mounts: Mount[]; env: Record<string, string> };
  /** each line of the preparation's progress */
  say: (line: string) => void;
  /** each thing the file asks that the runner ignores, said before anything is prepared (a failed preparation says them too) */
  warn?: (line: string) => void;
}

export interface PreparedDevcontainer {
  image: string;
  /** containerEnv and remoteEnv, resolved: every step in the dev container gets them (its pipeline's env: over them) */
  env: Record<string, string>;
  /** false: the image was there already (prepared by an earlier run) */
  prepared: boolean;
  key: string;
  /** what the file asks that the runner ignores, for the run's log */
  warnings: string[];
}

export async function prepareDevcontainer(runtime: ContainerRuntime, opts: PrepareOptions): Promise<PreparedDevcontainer> {
  const found = await loadDevcontainer(opts.project);
  const { config } = found;
  const warnings = found.reading.warnings.map((w) => `${path.relative(opts.project, found.file)}:${w.line}:${w.col} ${w.key}: ${w.message}`);
  const inputs = await gatherInputs(opts.project, found, config);
  const key = inputs.key;
  const image = `${PREPARED_REPOSITORY}:${key.slice(0, 24)}`;
  const unknown = new Set<string>();
  const ctx: VariableContext = { workspace: opts.workspace, projectName: path.basename(opts.project), containerEnv: config.containerEnv, devcontainerId: key.slice(0, 24) };
  const emptied = new Set<string>();
  const containerEnv = resolveEnv(config.containerEnv, ctx, (v) => unknown.add(v), (v) => emptied.add(v));
  const env = { ...containerEnv, ...resolveEnv(config.remoteEnv, { ...ctx, containerEnv }, (v) => unknown.add(v), (v) => emptied.add(v)) };
  if (unknown.size) warnings.push(`variables the runner does not know are left as written: ${[...unknown].join(', ')}`);
  // typescript-action's GITHUB_TOKEN: an editor's user has it in their shell, a step never has the runner's
  if (emptied.size) warnings.push(`${[...emptied].join(', ')} ${emptied.size === 1 ? 'is' : 'are'} empty in the dev container: the runner's own environment never reaches a step; a value a step needs is given by the pipeline (its secrets: or env:)`);
  if (config.workspaceFolder !== undefined) warnings.push(`workspaceFolder ${config.workspaceFolder} is not where the workspace is: a step's workspace is ${opts.workspace} (\${containerWorkspaceFolder} points there)`);
  for (const w of warnings) opts.warn?.(w);

  if (await runtime.hasImage(image)) {
    opts.say(`dev container: image ${image} was prepared before for this configuration: nothing to prepare`);
    return { image, env, prepared: false, key, warnings };
  }
  if (!runtime.buildImage || !runtime.commitContainer || !runtime.imageConfig) {
    throw new ContainerError('devcontainer_unsupported', 'this engine cannot build or commit images, which image: devcontainer needs: run the pipeline on the local engine (--engine docker)');
  }
  const left = await removeLeftovers(runtime);
  if (left) opts.say(`dev container: removed ${left} container(s) an interrupted preparation left`);
  opts.say(`dev container: preparing image ${image} from ${path.relative(opts.project, found.file)}`);
  // the intermediate names go, the preparation failed or not; their layers stay, under the prepared image
  try {
    const labels = { [DEVCONTAINER_LABEL]: key };
    let current: string;
    if (config.image !== undefined) {
      // pulled as any image is: with the user's registry credentials (ensureImage), the runner's own never
      await ensureBase(runtime, config.image, `"image" in ${path.relative(opts.project, found.file)}`, opts.say);
      current = config.image;
    } else {
      const b = inputs.build!;
      current = `${image}-build`;
      opts.say(`dev container: building ${path.relative(opts.project, b.dockerfileAbs)} (context ${path.relative(opts.project, b.contextDir) || '.'})`);
      // its base images pulled first, as any image is (with the user's registry credentials): the build finds them here
      for (const from of dockerfileBases(b.dockerfileText)) {
        await ensureBase(runtime, from, `FROM in ${path.relative(opts.project, b.dockerfileAbs)}`, opts.say);
      }
      const extra = b.dockerfileInContext ? [] : [{ name: '.runner-devcontainer.Dockerfile', content: b.dockerfileText }];
      await runtime.buildImage(
        { context: packContext(b.contextDir, b.entries, extra), dockerfile: b.dockerfileInContext ?? '.runner-devcontainer.Dockerfile', tag: current, args: config.build!.args, ...(config.build!.target ? { target: config.build!.target } : {}), labels },
        (line) => opts.say(`dev container build: ${line}`),
      );
    }
    const base = await runtime.imageConfig(current);
    if (!base) throw new ContainerError('devcontainer_failed', `image ${current} is not on the engine after it was prepared`);
    const remoteUser = config.remoteUser ?? config.containerUser ?? base.user ?? '';
    {
      // the local features, and the steps' HOME (a real dev container image has no /home/agent: a step could not write its HOME)
      const next = `${image}-features`;
      if (inputs.features.length) opts.say(`dev container: installing features ${inputs.features.map((f) => f.id).join(', ')}`);
      const dockerfile = featuresDockerfile(current, inputs.features, base.user, { remote: remoteUser || 'root', container: config.containerUser ?? (base.user || 'root') }, opts.home);
      const extra = [{ name: 'Dockerfile', content: dockerfile }, ...inputs.features.map((f) => ({ name: `${f.dir}/devcontainer-features.env`, content: envFile(f.env) }))];
      await runtime.buildImage({ context: packContext(found.folder, inputs.featureEntries, extra), dockerfile: 'Dockerfile', tag: next, args: {}, labels }, (line) => {
        if (inputs.features.length) opts.say(`dev container features: ${line}`);
      });
      current = next;
    }
    const script = preparationScript(config, (t) => resolveVariables(t, { ...ctx, containerEnv }));
    if (script) await runPreparingCommands(runtime, opts, { from: current, to: image, script, user: remoteUser, env, key, base });
    else {
      // nothing to run: the image is the last one made, under the prepared name
      await runTagOnly(runtime, opts, current, image, base, key);
    }
  } finally {
    for (const step of [`${image}-build`, `${image}-features`]) await runtime.untagImage?.(step).catch(() => undefined);
  }
  opts.say(`dev container: image ${image} is ready`);
  return { image, env, prepared: true, key, warnings };
}

/** A base image the dev container names, on the engine or pulled; one that is neither is said with where the file names it. */
async function ensureBase(runtime: ContainerRuntime, image: string, where: string, say: (line: string) => void): Promise<void> {
  try {
    await runtime.ensureImage(image, (p) => say(`dev container: pulling ${image}: ${p.status}${p.fraction !== undefined ? ` ${Math.round(p.fraction * 100)}%` : ''}`));
  } catch (err) {
    if (!(err instanceof ContainerError) || err.code !== 'image_missing') throw err;
    throw new ContainerError('image_missing', `the dev container's base image ${image} (${where}): ${err.message}; or name there a copy of it in a registry this machine reaches (your company's mirror: pulled with your Docker credentials, or --registry-auth FILE)`, { cause: err });
  }
}

interface Inputs {
  key: string;
  build?: { contextDir: string; dockerfileAbs: string; dockerfileText: string; dockerfileInContext?: string; entries: ContextEntry[] };
  features: PreparedFeature[];
  featureEntries: ContextEntry[];
}

/** Reads what the image is made from, and hashes it: the config's text, the Dockerfile, the context files it copies, the features. */
async function gatherInputs(project: string, found: FoundConfig, config: DevcontainerConfig): Promise<Inputs> {
  const hash = createHash('sha256');
  hash.update(`${RECIPE}\0${found.text}\0`);
  const out: Inputs = { key: '', features: [], featureEntries: [] };
  const relFolder = path.relative(project, found.folder);
  if (config.build) {
    const dockerfileAbs = await insideProject(project, path.join(relFolder, config.build.dockerfile), 'the Dockerfile');
    const contextDir = await insideProject(project, path.join(relFolder, config.build.context), 'the build context');
    const dockerfileText = await readProjectFile(dockerfileAbs, 'the Dockerfile');
    const entries = await listContext(contextDir);
    const inContext = path.relative(contextDir, dockerfileAbs);
    const sources = dockerfileSources(dockerfileText);
    hash.update(`dockerfile\0${dockerfileText}\0`);
    await hashEntries(hash, contextDir, entries.filter((e) => matchesSources(e.rel, sources)));
    out.build = { contextDir, dockerfileAbs, dockerfileText, entries, ...(inContext.startsWith('..') ? {} : { dockerfileInContext: inContext.split(path.sep).join('/') }) };
  }
  for (const [i, f] of config.features.entries()) {
    const dirAbs = await insideProject(project, path.join(relFolder, f.id), `feature ${f.id}`);
    const metaText = await readProjectFile(path.join(dirAbs, 'devcontainer-feature.json'), `feature ${f.id}'s devcontainer-feature.json`);
    await readProjectFile(path.join(dirAbs, 'install.sh'), `feature ${f.id}'s install.sh`);
    let meta: FeatureMetadata;
    try {
      meta = JSON.parse(metaText.replace(/^\s*\/\/.*$/gm, '')) as FeatureMetadata;
    } catch (err) {
      throw new ContainerError('devcontainer_invalid', `feature ${f.id}: its devcontainer-feature.json is not JSON (${errorMessage(err)})`);
    }
    const dirRel = path.relative(found.folder, dirAbs).split(path.sep).join('/');
    const entries = (await listContext(dirAbs)).map((e) => ({ ...e, rel: `${dirRel}/${e.rel}` }));
    hash.update(`feature\0${i}\0${f.id}\0`);
    await hashEntries(hash, found.folder, entries);
    out.featureEntries.push(...dirParents(dirRel), ...entries);
    out.features.push({ id: f.id, dir: dirRel, env: featureEnv(meta, f.options), containerEnv: meta.containerEnv ?? {} });
  }
  out.key = hash.digest('hex');
  return out;
}

/** The directories above a feature's folder, for its tar. */
function dirParents(rel: string): ContextEntry[] {
  const parts = rel.split('/');
  return parts.map((_, i) => ({ rel: parts.slice(0, i + 1).join('/'), kind: 'dir' as const, mode: 0o755, size: 0 }));
}

/** The image's own settings given back after a commit: the container's command and user are the preparation's, not the image's. */
function restoreChanges(base: { user: string; workingDir: string; cmd: string[] | undefined }, key: string): string[] {
  return [
    ...(base.cmd ? [`CMD ${JSON.stringify(base.cmd)}`] : []),
    `USER ${base.user || 'root'}`,
    `WORKDIR ${base.workingDir || '/'}`,
    `LABEL ${DEVCONTAINER_LABEL}=${key}`,
    `LABEL ${PREPARER_PID_LABEL}=""`,
  ];
}

/**
 * The capabilities the preparing commands get back: what a package manager needs to install as root (owning files,
 * reading and writing what another user owns, dropping to its own user), as a Dockerfile's RUN has them; never the
 * engine's network, raw sockets, devices or admin ones. No new privileges: sudo does not work, run the command as root.
 */
const PREPARING_CAPS = ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'SETUID', 'SETGID', 'KILL'];

async function runPreparingCommands(
  runtime: ContainerRuntime,
  opts: PrepareOptions,
  p: { from: string; to: string; script: string; user: string; env: Record<string, string>; key: string; base: { user: string; workingDir: string; cmd: string[] | undefined } },
): Promise<void> {
  const way = opts.openWay ? await opts.openWay() : undefined;
  try {
    await runInWay(runtime, opts, p, way);
  } finally {
    await way?.close().catch(() => undefined);
  }
}

async function runInWay(
  runtime: ContainerRuntime,
  opts: PrepareOptions,
  p: { from: string; to: string; script: string; user: string; env: Record<string, string>; key: string; base: { user: string; workingDir: string; cmd: string[] | undefined } },
  way: PreparingWay | undefined,
): Promise<void> {
  const network = way?.network ?? opts.sandbox.network;
  opts.say(`dev container: running its preparing commands as ${p.user || "the image's user"}, ${way ? 'behind a gateway that allows the hosts of egress:' : `network ${network}`}`);
  // the project is seen at the workspace's place, and what the commands write there is thrown away with the container
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'runner-devcontainer-'));
  await mkdir(path.join(scratch, 'upper'));
  await mkdir(path.join(scratch, 'work'));
  const name = `runner-devcontainer-prepare-${p.key.slice(0, 12)}-${process.pid}`;
  // the company's variables (its CA, its mirrors) and the steps' HOME under the file's own, as a step's are under its env:
  const secretEnv = { ...without({ ...(opts.company?.env ?? {}), HOME: opts.home }, p.env), ...(way?.env ?? {}) };
  const c = await runtime.create({
    name,
    image: p.from,
    cmd: ['/bin/sh', '-c', `${p.script}\n${homeHandOver(opts.home, opts.workspace)}`],
    env: p.env,
    workingDir: opts.workspace,
    user: p.user,
    mounts: [{ source: opts.project, target: opts.workspace, readOnly: false, overlay: { upper: path.join(scratch, 'upper'), work: path.join(scratch, 'work') } }, ...(opts.company?.mounts ?? [])],
    memoryBytes: opts.sandbox.memoryBytes,
    cpus: opts.sandbox.cpus,
    pids: opts.sandbox.pids,
    openFiles: opts.sandbox.openFiles,
    fileSizeBytes: opts.sandbox.fileSizeBytes,
    readOnlyRoot: false,
    capAdd: PREPARING_CAPS,
    network,
    ...(way?.dns ? { dns: way.dns } : {}),
    ...(way?.hosts ? { hosts: way.hosts } : {}),
    ...(Object.keys(secretEnv).length ? { secretEnv } : {}),
    ...(way?.up ? { holdUntil: way.up } : {}),
    labels: preparingLabels(),
  });
  const last: string[] = [];
  const lines = (stream: string) =>
    new LineSplitter((line) => {
      last.push(line);
      if (last.length > 20) last.shift();
      opts.say(`dev container ${stream}: ${line}`);
    });
  const out = lines('|');
  const err = lines('!');
  try {
    const attached = await c.attach((b) => out.push(b), (b) => err.push(b));
    const waited = c.wait();
    await c.start();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      void c.kill();
    }, opts.sandbox.timeoutMs);
    await waited.finally(() => clearTimeout(timer));
    await attached.ended;
    out.end();
    err.end();
    const state = await c.inspect();
    if (timedOut || state.oomKilled || state.exitCode !== 0) {
      const why = timedOut ? `timed out after ${Math.round(opts.sandbox.timeoutMs / 1000)}s` : state.oomKilled ? 'ran out of memory (oom)' : `exited ${state.exitCode}`;
      throw new ContainerError('devcontainer_failed', `the dev container's preparing commands ${why}: nothing was kept, the next run prepares again. Their last lines:\n${last.join('\n')}`);
    }
    await runtime.commitContainer!(c.id, p.to, restoreChanges(p.base, p.key));
  } finally {
    await c.remove().catch(() => undefined);
    await rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** `env` less the names `over` sets. Pure. */
function without(env: Record<string, string>, over: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !(k in over)));
}

/** No preparing command: the last image made is named as prepared, by a commit of a container that never ran. */
async function runTagOnly(runtime: ContainerRuntime, opts: PrepareOptions, from: string, to: string, base: { user: string; workingDir: string; cmd: string[] | undefined }, key: string): Promise<void> {
  const c = await runtime.create({
    name: `runner-devcontainer-tag-${key.slice(0, 12)}-${process.pid}`,
    image: from,
    cmd: ['true'],
    env: {},
    workingDir: base.workingDir || '/',
    user: base.user,
    mounts: [],
    memoryBytes: opts.sandbox.memoryBytes,
    cpus: opts.sandbox.cpus,
    pids: opts.sandbox.pids,
    openFiles: opts.sandbox.openFiles,
    fileSizeBytes: opts.sandbox.fileSizeBytes,
    readOnlyRoot: false,
    capAdd: [],
    network: 'none',
    labels: preparingLabels(),
  });
  try {
    await runtime.commitContainer!(c.id, to, restoreChanges(base, key));
  } finally {
    await c.remove().catch(() => undefined);
  }
}
