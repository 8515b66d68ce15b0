/**
 * A project's devcontainer.json (the Dev Containers spec, containers.dev), read as the runner takes it: the keys it
 * honours (image, build, containerEnv, remoteEnv, containerUser, remoteUser, workspaceFolder, the lifecycle commands
 * that prepare an image, local features), the keys it refuses (what would open the host or the sandbox: ports, mounts,
 * runArgs, privileged, capAdd, securityOpt, initializeCommand, features from a registry) and the keys it ignores with
 * a warning (the rest). Every issue carries its line and column. Pure: the text in, the reading out.
 */
import * as parser from 'jsonc-parser';
import type { Node, ParseError } from 'jsonc-parser';

// Node loads the package's UMD main as CommonJS (its functions on the default export); the bundle, its ES module build
const jsonc: typeof parser = (parser as unknown as { default?: typeof parser }).default ?? parser;

/** What a pipeline writes as its image to mean the project's dev container. */
export const DEVCONTAINER_IMAGE = 'devcontainer';

/** A lifecycle command as the spec writes it: a shell string, an argv list, or named commands (each either). */
export type LifecycleCommand = { kind: 'shell'; script: string } | { kind: 'argv'; argv: string[] };

/** One named command of a lifecycle key: `name` is the object form's key, or undefined for the string and array forms. */
export interface NamedCommand {
  name?: string;
  command: LifecycleCommand;
}

export const PREPARING_COMMANDS = ['onCreateCommand', 'updateContentCommand', 'postCreateCommand'] as const;
export type PreparingCommand = (typeof PREPARING_COMMANDS)[number];

export interface DevcontainerFeature {
  /** as the file names it: `./features/x` */
  id: string;
  /** the option values the file gives (strings and booleans as the spec allows) */
  options: Record<string, string | boolean>;
}

export interface DevcontainerBuild {
  /** relative to the file's folder */
  dockerfile: string;
  /** relative to the file's folder; `.` when not given */
  context: string;
  args: Record<string, string>;
  target?: string;
}

export interface DevcontainerConfig {
  image?: string;
  build?: DevcontainerBuild;
  containerEnv: Record<string, string>;
  remoteEnv: Record<string, string>;
  containerUser?: string;
  remoteUser?: string;
  /** as written: the runner keeps its own workspace path (the spec's variable points there) */
  workspaceFolder?: string;
  lifecycle: Record<PreparingCommand, NamedCommand[]>;
  features: DevcontainerFeature[];
}

export interface ConfigIssue {
  /** the key's path in the file, e.g. `runArgs` or `build.dockerfile` */
  key: string;
  message: string;
  line: number;
  col: number;
}

export interface ConfigReading {
  /** undefined when `errors` holds anything */
  config?: DevcontainerConfig;
  /** refused: the file cannot be used until they are gone */
  errors: ConfigIssue[];
  /** ignored, said */
  warnings: ConfigIssue[];
}

/** Keys refused: each would give the step what the sandbox promises it never has (docs/sandbox.md). */
export const REFUSED_KEYS: Readonly<Record<string, string>> = {
  runArgs: 'docker run arguments would bypass the sandbox (capabilities, devices, networks, the host): remove runArgs and say what you need in the pipeline (resources:, cap_add:, network:)',
  privileged: 'a step never runs privileged: remove privileged',
  capAdd: "capabilities are added by the pipeline's cap_add:, under its rules, never by the dev container: remove capAdd",
  securityOpt: 'a step runs with no-new-privileges and the engine\'s default profiles: remove securityOpt',
  init: 'the runner always starts a step with an init process: remove init',
  initializeCommand: "initializeCommand runs on the host, and nothing from a project runs on the runner's host: remove it (prepare in the Dockerfile or onCreateCommand instead)",
  dockerComposeFile: 'a dev container made of a compose project is not taken: use image or build (a single container)',
};

/** Keys ignored, with what the runner does instead (said as a warning at load). */
export const IGNORED_KEYS: Readonly<Record<string, string>> = {
  // never honoured, and common in real projects' files (the templates forward ports; editors mount credentials):
  // refusing them would make a team edit the file its editors use, for nothing the step would get either way
  forwardPorts: 'ignored: a step publishes no port on the host (a step serves nothing outside its own network)',
  appPort: 'ignored: a step publishes no port on the host',
  mounts: "ignored: a step mounts nothing of the host's but its workspace and the caches its pipeline names (use cache: in the pipeline for a tool's cache; a credential is a secret of the pipeline)",
  workspaceMount: 'ignored: the runner mounts the workspace itself (a git worktree of the run)',
  postStartCommand: 'ignored: a step is not a long-lived container that starts; put what every step needs in onCreateCommand or postCreateCommand (kept in the image), or in the step',
  postAttachCommand: 'ignored: nothing attaches to a step; put it in postCreateCommand or in the step',
  waitFor: 'ignored: every preparing command has finished before any step starts',
  shutdownAction: 'ignored: a step ends when its command does',
  overrideCommand: "ignored: a step's command is always the pipeline's",
  updateRemoteUserUID: "ignored: a step runs with the uid the runner's user rules give (the project's owner, never root)",
  userEnvProbe: 'ignored: the environment is containerEnv, remoteEnv and the pipeline\'s env:',
  hostRequirements: "ignored: a step's resources come from the pipeline's resources:",
  portsAttributes: 'ignored: no port is forwarded',
  otherPortsAttributes: 'ignored: no port is forwarded',
  overrideFeatureInstallOrder: 'ignored: local features are installed in the order the file lists them',
  runServices: 'ignored: compose projects are not taken',
  service: 'ignored: compose projects are not taken',
};

/** Keys with no meaning to the runner that are read and dropped without a word (names, editor settings). */
const SILENT_KEYS = new Set(['name', 'customizations', '$schema', 'settings', 'extensions', 'gpuRequirements']);

/** Keys the runner takes. */
const TAKEN_KEYS = new Set(['image', 'build', 'containerEnv', 'remoteEnv', 'containerUser', 'remoteUser', 'workspaceFolder', 'features', ...PREPARING_COMMANDS]);

/** A feature from a registry (ghcr.io/..., mcr.microsoft.com/...) or a URL: only a folder of the project is taken. */
export function isLocalFeature(id: string): boolean {
  return id.startsWith('./') || id.startsWith('../');
}

/** Where the source of a feature of the devcontainers collection is (its install.sh and devcontainer-feature.json), to copy. */
function featureSource(id: string): string {
  const m = /^ghcr\.io\/devcontainers\/features\/([a-z0-9-]+)(?::[^/]*)?$/.exec(id);
  return m ? ` (its source: https://github.com/devcontainers/features/tree/main/src/${m[1]}; what it downloads when it installs, it downloads in the engine's build)` : '';
}

export function readDevcontainerConfig(text: string): ConfigReading {
  const errors: ConfigIssue[] = [];
  const warnings: ConfigIssue[] = [];
  const lines = lineStarts(text);
  const at = (node: Node | undefined, key: string, message: string): ConfigIssue => ({ key, message, ...position(lines, node?.offset ?? 0) });
  const parseErrors: ParseError[] = [];
  const root = jsonc.parseTree(text, parseErrors, { allowTrailingComma: true, disallowComments: false });
  if (parseErrors.length || !root) {
    const e = parseErrors[0];
    return { errors: [{ key: '', message: `not valid JSON with comments (${e ? jsonc.printParseErrorCode(e.error) : 'empty'})`, ...position(lines, e?.offset ?? 0) }], warnings };
  }
  if (root.type !== 'object') return { errors: [at(root, '', 'expected an object ({ "image": ... } or { "build": ... })')], warnings };

  const props = new Map<string, Node>();
  for (const p of root.children ?? []) {
    const [k, v] = p.children ?? [];
    if (k && v) props.set(String(k.value), v);
  }
  const keyNode = (name: string): Node | undefined => props.get(name)?.parent?.children?.[0];

  for (const name of props.keys()) {
    if (REFUSED_KEYS[name]) errors.push(at(keyNode(name), name, `refused: ${REFUSED_KEYS[name]}`));
    else if (IGNORED_KEYS[name]) warnings.push(at(keyNode(name), name, IGNORED_KEYS[name]!));
    else if (!TAKEN_KEYS.has(name) && !SILENT_KEYS.has(name)) warnings.push(at(keyNode(name), name, 'ignored: the runner does not know this key'));
  }

  const str = (name: string, node: Node | undefined): string | undefined => {
    if (!node) return undefined;
    if (node.type === 'string') return String(node.value);
    errors.push(at(node, name, 'expected a string'));
    return undefined;
  };
  const env = (name: string): Record<string, string> => {
    const node = props.get(name);
    if (!node) return {};
    if (node.type !== 'object') {
      errors.push(at(node, name, 'expected an object of variable names to strings'));
      return {};
    }
    const out: Record<string, string> = {};
    for (const p of node.children ?? []) {
      const [k, v] = p.children ?? [];
      if (!k || !v) continue;
      const key = String(k.value);
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) errors.push(at(k, `${name}.${key}`, 'expected a variable name (letters, digits, _)'));
      // remoteEnv's null unsets a variable: nothing to set here
      else if (v.type === 'null') continue;
      else if (v.type !== 'string') errors.push(at(v, `${name}.${key}`, 'expected a string'));
      else out[key] = String(v.value);
    }
    return out;
  };

  const image = str('image', props.get('image'));
  let build: DevcontainerBuild | undefined;
  const buildNode = props.get('build');
  if (buildNode) {
    if (buildNode.type !== 'object') errors.push(at(buildNode, 'build', 'expected an object like { "dockerfile": "Dockerfile" }'));
    else build = readBuild(buildNode, errors, at, str);
  }
  const legacyDockerfile = props.get('dockerFile') ?? props.get('dockerfile');
  if (legacyDockerfile && !build) {
    const dockerfile = str('dockerFile', legacyDockerfile);
    const context = str('context', props.get('context'));
    if (dockerfile) build = { dockerfile, context: context ?? '.', args: {} };
  }
  if (image !== undefined && build) errors.push(at(keyNode('image'), 'image', 'give either image or build, not both'));
  if (image === undefined && !build && !errors.length) errors.push(at(root, '', 'no image: give "image" (an image name) or "build" (a Dockerfile)'));

  const lifecycle = {} as Record<PreparingCommand, NamedCommand[]>;
  for (const key of PREPARING_COMMANDS) lifecycle[key] = readCommand(key, props.get(key), errors, at);

  const features: DevcontainerFeature[] = [];
  const featuresNode = props.get('features');
  if (featuresNode && featuresNode.type !== 'object') errors.push(at(featuresNode, 'features', 'expected an object of feature ids to their options'));
  for (const p of featuresNode?.type === 'object' ? (featuresNode.children ?? []) : []) {
    const [k, v] = p.children ?? [];
    if (!k || !v) continue;
    const id = String(k.value);
    if (!isLocalFeature(id)) {
      errors.push(at(k, `features.${id}`, `refused: feature ${id} is not a folder of the project: a feature from a registry is code the runner would fetch and run as root in the image, from a name someone else may own; copy it into .devcontainer (e.g. ./features/${id.split('/').pop()?.split(':')[0] ?? 'name'}) and name it ./features/...${featureSource(id)}`));
      continue;
    }
    const options: Record<string, string | boolean> = {};
    if (v.type === 'string') options.version = String(v.value);
    else if (v.type === 'object') {
      for (const o of v.children ?? []) {
        const [ok, ov] = o.children ?? [];
        if (!ok || !ov) continue;
        if (ov.type === 'string' || ov.type === 'boolean') options[String(ok.value)] = ov.value as string | boolean;
        else errors.push(at(ov, `features.${id}.${String(ok.value)}`, 'expected a string or a boolean'));
      }
    } else errors.push(at(v, `features.${id}`, 'expected an object of options'));
    features.push({ id, options });
  }

  if (errors.length) return { errors, warnings };
  const config: DevcontainerConfig = {
    containerEnv: env('containerEnv'),
    remoteEnv: env('remoteEnv'),
    lifecycle,
    features,
  };
  if (image !== undefined) config.image = image;
  if (build) config.build = build;
  const containerUser = str('containerUser', props.get('containerUser'));
  const remoteUser = str('remoteUser', props.get('remoteUser'));
  const workspaceFolder = str('workspaceFolder', props.get('workspaceFolder'));
  if (containerUser !== undefined) config.containerUser = containerUser;
  if (remoteUser !== undefined) config.remoteUser = remoteUser;
  if (workspaceFolder !== undefined) config.workspaceFolder = workspaceFolder;
  if (errors.length) return { errors, warnings };
  return { config, errors, warnings };
}

type At = (node: Node | undefined, key: string, message: string) => ConfigIssue;

function readBuild(node: Node, errors: ConfigIssue[], at: At, str: (name: string, node: Node | undefined) => string | undefined): DevcontainerBuild | undefined {
  const props = new Map<string, Node>();
  for (const p of node.children ?? []) {
    const [k, v] = p.children ?? [];
    if (k && v) props.set(String(k.value), v);
  }
  for (const [name, v] of props) {
    if (!['dockerfile', 'dockerFile', 'context', 'args', 'target', 'cacheFrom', 'options'].includes(name)) errors.push(at(v.parent?.children?.[0], `build.${name}`, 'unknown build key: expected dockerfile, context, args or target'));
  }
  if (props.has('options')) errors.push(at(props.get('options')!.parent?.children?.[0], 'build.options', 'refused: docker build options could reach the host (networks, secrets, mounts): remove build.options'));
  const dockerfile = str('build.dockerfile', props.get('dockerfile') ?? props.get('dockerFile'));
  if (dockerfile === undefined) {
    errors.push(at(node, 'build', 'build names no dockerfile: add "dockerfile": "Dockerfile"'));
    return undefined;
  }
  const args: Record<string, string> = {};
  const argsNode = props.get('args');
  if (argsNode && argsNode.type !== 'object') errors.push(at(argsNode, 'build.args', 'expected an object of argument names to strings'));
  for (const p of argsNode?.type === 'object' ? (argsNode.children ?? []) : []) {
    const [k, v] = p.children ?? [];
    if (!k || !v) continue;
    if (v.type !== 'string') errors.push(at(v, `build.args.${String(k.value)}`, 'expected a string'));
    else args[String(k.value)] = String(v.value);
  }
  const context = str('build.context', props.get('context'));
  const target = str('build.target', props.get('target'));
  return { dockerfile, context: context ?? '.', args, ...(target !== undefined ? { target } : {}) };
}

function readCommand(key: string, node: Node | undefined, errors: ConfigIssue[], at: At): NamedCommand[] {
  if (!node) return [];
  const one = (n: Node, where: string): LifecycleCommand | undefined => {
    if (n.type === 'string') return { kind: 'shell', script: String(n.value) };
    if (n.type === 'array' && (n.children ?? []).length && (n.children ?? []).every((c) => c.type === 'string')) return { kind: 'argv', argv: (n.children ?? []).map((c) => String(c.value)) };
    errors.push(at(n, where, 'expected a command: a string (run by /bin/sh), a non-empty list of strings (an argv), or an object of named commands'));
    return undefined;
  };
  if (node.type === 'object') {
    const out: NamedCommand[] = [];
    for (const p of node.children ?? []) {
      const [k, v] = p.children ?? [];
      if (!k || !v) continue;
      const c = one(v, `${key}.${String(k.value)}`);
      if (c) out.push({ name: String(k.value), command: c });
    }
    return out;
  }
  const c = one(node, key);
  return c ? [{ command: c }] : [];
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

function position(starts: number[], offset: number): { line: number; col: number } {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, col: offset - starts[lo]! + 1 };
}
