/**
 * An agent preset on `image: devcontainer`: its CLI is copied from the runner's own agent image (runner/claude-code,
 * runner/codex, runner/opencode: built here from their recipes, never pulled) onto the project's prepared image, as
 * one more layer, with the agent image's Node when the project's image has none, and the settings the agent image
 * gives its CLI (no auto-update, no telemetry). Made once per (project image, agent image), kept by its name.
 */
import { createHash } from 'node:crypto';
import { ContainerError } from '../../common/errors.js';
import type { ContainerRuntime, ImageConfig } from '../runtime.js';
import { packContext } from './context.js';
import { DEVCONTAINER_LABEL } from './prepare.js';

/** Where each preset's CLI is in its image (images/<name>/Dockerfile installs it with npm install -g). */
export const AGENT_CLIS: Readonly<Record<string, { modules: string; bin: string; target: string }>> = {
  'claude-code': { modules: '@anthropic-ai', bin: 'claude', target: '/usr/local/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe' },
  codex: { modules: '@openai', bin: 'codex', target: '/usr/local/lib/node_modules/@openai/codex/bin/codex.js' },
  opencode: { modules: 'opencode-ai', bin: 'opencode', target: '/usr/local/lib/node_modules/opencode-ai/bin/opencode.exe' },
};

/** Variables of the agent image the project's image does not decide: the CLI's own settings. */
const KEPT_ENV = (name: string): boolean => !['PATH', 'HOME', 'LANG', 'HOSTNAME'].includes(name);

/** The Dockerfile of the layer. Pure. */
export function agentLayerDockerfile(base: string, agentImage: string, preset: string, agentEnv: Readonly<Record<string, string>>, baseUser: string): string {
  const cli = AGENT_CLIS[preset];
  if (!cli) throw new ContainerError('devcontainer_unsupported', `agent preset ${preset} cannot be added to a dev container image (no recipe for where its CLI is)`);
  const env = Object.entries(agentEnv).filter(([k]) => KEPT_ENV(k) && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k));
  return [
    `FROM ${agentImage} AS agent`,
    `FROM ${base}`,
    'USER root',
    `COPY --from=agent /usr/local/lib/node_modules/${cli.modules} /usr/local/lib/node_modules/${cli.modules}`,
    'COPY --from=agent /usr/local/bin/node /opt/runner-agent/bin/node',
    // the agent's HOME is /home/agent, as on the runner's images: any step's user writes its settings there
    `RUN ln -sf ${cli.target} /usr/local/bin/${cli.bin} && (command -v node >/dev/null 2>&1 || ln -s /opt/runner-agent/bin/node /usr/local/bin/node) && mkdir -p /home/agent && chmod 1777 /home/agent && ${cli.bin} --version`,
    ...(env.length ? [`ENV ${env.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(' ')}`] : []),
    ...(baseUser ? [`USER ${baseUser}`] : []),
    '',
  ].join('\n');
}

/** The project's image with the preset's CLI: made when missing, else found. */
export async function agentLayer(runtime: ContainerRuntime, base: string, agentImage: string, preset: string, say: (line: string) => void): Promise<string> {
  if (!runtime.buildImage || !runtime.imageConfig) throw new ContainerError('devcontainer_unsupported', 'this engine cannot build images, which an agent on image: devcontainer needs');
  await runtime.ensureImage(agentImage, () => undefined);
  const [agent, project] = await Promise.all([runtime.imageConfig(agentImage), runtime.imageConfig(base)]);
  if (!agent || !project) throw new ContainerError('devcontainer_failed', `image ${agent ? base : agentImage} is not on the engine`);
  const dockerfile = agentLayerDockerfile(base, agentImage, preset, agent.env, project.user);
  const key = createHash('sha256').update(`${idOf(project)}\0${idOf(agent)}\0${dockerfile}`).digest('hex').slice(0, 16);
  const tag = `${base}-${preset}-${key}`;
  if (await runtime.hasImage(tag)) {
    say(`dev container: ${preset} was added to ${base} before: nothing to prepare`);
    return tag;
  }
  say(`dev container: adding ${preset} (from ${agentImage}) to ${base}`);
  await runtime.buildImage({ context: packContext('/', [], [{ name: 'Dockerfile', content: dockerfile }]), dockerfile: 'Dockerfile', tag, args: {}, labels: { [DEVCONTAINER_LABEL]: key } }, (line) => say(`dev container ${preset}: ${line}`));
  return tag;
}

function idOf(c: ImageConfig): string {
  return c.id ?? '';
}
