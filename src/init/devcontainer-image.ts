/**
 * Whether this runner takes `image: devcontainer` (the project's own dev
 * container as the steps' and agents' image, src/container/devcontainer/):
 * init proposes it only then. Any image name validates, so validating is no
 * answer: the check is that a pipeline with `defaults: image: devcontainer`
 * parses and plans its agent and its verify step onto the dev container.
 */
import { DEVCONTAINER_IMAGE } from '../container/devcontainer/config.js';
import { parsePipeline } from '../pipeline/parse.js';
import { planSteps } from '../plan/step-plan.js';

export function schemaTakesDevcontainer(): boolean {
  try {
    const probe = parsePipeline(
      JSON.stringify({
        version: 1,
        name: 'probe',
        defaults: { image: 'devcontainer' },
        secrets: ['ANTHROPIC_API_KEY'],
        agents: { coder: { use: 'claude-code' } },
        steps: [
          { id: 'implement', agent: 'coder', prompt: 'x' },
          { id: 'verify', run: 'true', verify: true },
        ],
      }),
      'probe',
    );
    return planSteps(probe).every((p) => p.image === DEVCONTAINER_IMAGE);
  } catch {
    return false;
  }
}
