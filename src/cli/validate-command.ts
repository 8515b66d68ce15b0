/**
 * `runner validate FILE`: every problem of the file with its line and column
 * (exit 2), else ok. Warnings, not errors, for what this machine lacks and
 * the one that runs the pipeline may have: the project path, an image; and
 * for an agent that holds its key on an open network, and for steps that ask
 * for gVisor where the engine has none.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../common/errors.js';
import { visible } from '../common/visible.js';
import { DockerRuntime, recipesDir } from '../container/local/docker.js';
import { isOwnImage, ownImageMissing } from '../container/own-images.js';
import { loadPipeline } from '../pipeline/load.js';
import { openKeyWarnings, planSteps } from '../plan/step-plan.js';
import { GATEWAY_IMAGE } from '../gateway/host/image.js';
import { parseFlags } from './args.js';
import { SETTINGS_FLAGS } from '../settings/flags.js';
import { readIsolation } from '../settings/isolation.js';
import { gvisorCaveats } from '../container/gvisor.js';
import { DEVCONTAINER_IMAGE, loadDevcontainer } from '../container/devcontainer/prepare.js';

export async function validateCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('validate', args, { isolation: SETTINGS_FLAGS.isolation }, ['FILE']);
  const file = positionals[0]!;
  const loaded = await loadPipeline(file);
  const { pipeline } = loaded;
  const warnings: string[] = [];
  const project = path.resolve(loaded.dir, pipeline.project.path);
  if (!existsSync(project)) warnings.push(`project path ${project} does not exist here (fine if the machine that runs the pipeline has it)`);
  const isolation = readIsolation(values.isolation, process.env);
  const plans = planSteps(pipeline, isolation ? { isolation } : {});
  warnings.push(...openKeyWarnings(plans));
  // image: devcontainer: the project's dev container file is read here, its refused keys refused with their lines
  if (existsSync(project) && plans.some((p) => !p.approval && p.image === DEVCONTAINER_IMAGE)) {
    const found = await loadDevcontainer(project);
    warnings.push(...found.reading.warnings.map((w) => `${path.relative(process.cwd(), found.file)}:${w.line}:${w.col} ${w.key}: ${w.message}`));
  }
  const images = [...new Set(plans.filter((s) => s.image !== DEVCONTAINER_IMAGE).map((s) => s.image))];
  if (plans.some((p) => p.gateway)) images.push(GATEWAY_IMAGE);
  const runtime = new DockerRuntime();
  try {
    await runtime.ping();
    for (const image of images) {
      if (await runtime.hasImage(image)) continue;
      warnings.push(
        isOwnImage(image)
          ? `${ownImageMissing(image, recipesDir())} (a run here is refused until then)`
          : `image ${image} is not on this machine's engine (a run here pulls it from its registry; or build it before)`,
      );
    }
  } catch (err) {
    warnings.push(`images not checked: ${errorMessage(err)}`);
  }
  // a step that asks for gVisor where the engine has none is refused at run time: said here first
  const sandboxed = plans.filter((p) => p.isolation === 'gvisor');
  warnings.push(...gvisorCaveats(sandboxed));
  if (sandboxed.length) {
    try {
      const probe = await firstPresent(runtime, sandboxed.map((p) => p.image));
      if (probe) warnings.push(...(await runtime.checkIsolation(sandboxed.map((p) => ({ ...p, image: probe })))));
      else warnings.push('isolation: gvisor not checked: none of those steps\' images is on this engine yet');
    } catch (err) {
      warnings.push(`${errorMessage(err)} (a run here is refused until then)`);
    }
  }
  for (const w of warnings) process.stderr.write(`${visible(`${file}: warning: ${w}`)}\n`);
  process.stdout.write(`${file}: ok (pipeline ${pipeline.name}, ${pipeline.steps.length} step${pipeline.steps.length === 1 ? '' : 's'})\n`);
  return 0;
}

async function firstPresent(runtime: DockerRuntime, images: string[]): Promise<string | undefined> {
  for (const image of new Set(images)) if (await runtime.hasImage(image).catch(() => false)) return image;
  return undefined;
}
