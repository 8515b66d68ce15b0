/**
 * Phase 3 of validation: named rules across the whole file (unique ids,
 * references to agents, steps, outputs and secrets that exist). Pure.
 */
import { didYouMean } from '../common/did-you-mean.js';
import { PRESETS } from '../agents/presets.js';
import { checkFlow } from '../flow/check.js';
import { flowShape, type FlowShape } from '../flow/graph.js';
import { cronProblem } from '../schedule/cron.js';
import { checkCredentialRules } from './credential-rules.js';
import { namesThisMachine } from '../plan/host-model.js';
import { checkNotifyRules } from '../notify/rules.js';
import { GATE_OUTPUTS } from '../run/gate.js';
import type { DocPath } from './positions.js';
import type { PipelineFile, StepFile } from './schema.js';
import { describeExpression, findExpressions, isWholeExpression } from './template.js';

export interface RuleIssue {
  path: DocPath;
  message: string;
  /** point at the key rather than the value */
  atKey?: boolean;
}

export function checkRules(p: PipelineFile): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const agents = p.agents ?? {};
  const declaredSecrets = new Set(p.secrets ?? []);
  const seen = new Map<string, number>();
  const credentialsAsked = new Set<string>();
  const hostAsked = new Set<string>();
  const shape = flowShape(p.steps);
  issues.push(...checkFlow(p));
  issues.push(...checkCredentialRules(p));
  issues.push(...checkNotifyRules(p));

  for (const [name, value] of Object.entries(p.env ?? {})) {
    if (findExpressions(value).length > 0) {
      issues.push({ path: ['env', name], message: '${{ }} expressions are only allowed in a step\'s prompt, env, run and command (write $${{ for the text itself)' });
    }
  }
  if (p.schedule?.length) {
    for (const [name, input] of Object.entries(p.inputs ?? {})) {
      if (input.default === undefined) {
        issues.push({
          path: ['inputs', name],
          atKey: true,
          message: `input ${name} has no default, so a scheduled run would have no value for it: give it a default:, or drop the schedule`,
        });
      }
    }
  }
  p.schedule?.forEach((entry, i) => {
    const problem = cronProblem(entry);
    if (problem) issues.push({ path: ['schedule', i, 'cron'], message: `${problem} (cron "${entry.cron}"${entry.timezone ? ` in ${entry.timezone}` : ''})` });
  });
  if (p.defaults?.network !== undefined && p.defaults.egress !== undefined) issues.push({ path: ['defaults', 'egress'], atKey: true, message: NETWORK_AND_EGRESS });
  for (const [name, agent] of Object.entries(agents)) {
    if (agent.network !== undefined && agent.egress !== undefined) issues.push({ path: ['agents', name, 'egress'], atKey: true, message: NETWORK_AND_EGRESS });
    agent.secrets?.forEach((s, j) => {
      if (!declaredSecrets.has(s)) issues.push({ path: ['agents', name, 'secrets', j], message: undeclaredSecret(s) });
    });
  }

  p.steps.forEach((step, i) => {
    const at = (...rest: (string | number)[]): DocPath => ['steps', i, ...rest];

    const first = seen.get(step.id);
    if (first !== undefined) {
      issues.push({ path: at('id'), message: `duplicate step id "${step.id}" (first used by steps[${first}])` });
    } else {
      seen.set(step.id, i);
    }

    if (step.approval) {
      issues.push(...approvalProblems(step, i, p));
      return;
    }

    const agent = step.agent !== undefined ? agents[step.agent] : undefined;
    if (step.agent !== undefined && !agent) {
      const known = Object.keys(agents);
      issues.push({
        path: at('agent'),
        message: `unknown agent "${step.agent}"${didYouMean(step.agent, known)}; known agents: ${known.join(', ') || 'none (add an agents: section)'}`,
      });
    }

    if (step.network !== undefined && step.egress !== undefined) issues.push({ path: at('egress'), atKey: true, message: NETWORK_AND_EGRESS });
    if (step.run !== undefined && step.command !== undefined) {
      issues.push({ path: at('command'), atKey: true, message: 'a step has either run or command, not both' });
    }
    const preset = agent?.use !== undefined ? PRESETS[agent.use] : undefined;
    const hasCommand = step.run !== undefined || step.command !== undefined || agent?.run !== undefined || agent?.command !== undefined;
    if (preset && !hasCommand) {
      if (step.prompt === undefined) issues.push({ path: at(), message: `step "${step.id}" uses agent ${step.agent} (${preset.name}) and has no prompt: say what it should do` });
      const refused = preset.refuse?.({ user: step.user ?? agent?.user ?? p.defaults?.user });
      const gated = step.network === undefined && agent?.network === undefined;
      if (gated && !preset.api({ model: agent?.model, baseUrl: agent?.base_url })) {
        issues.push({ path: ['agents', step.agent!, 'model'], message: `the gateway speaks the Anthropic and OpenAI APIs, and ${preset.name}'s model ${agent?.model} is neither's: use an anthropic/ or openai/ model, or give the agent network: bridge (its key then enters the container)` });
      }
      if (refused) issues.push({ path: at(), message: `step "${step.id}": ${refused}` });
      // a model on this machine: its gateway reaches it (src/gateway/host/model-relay.ts); a container on a network of its own does not
      const onHost = namesThisMachine(agent?.base_url);
      if (onHost && !gated && !hostAsked.has(step.agent!)) {
        hostAsked.add(step.agent!);
        issues.push({ path: ['agents', step.agent!, 'base_url'], message: `agent ${step.agent}'s base_url ${agent?.base_url} is this machine, which a step on network: ${step.network ?? agent?.network} does not reach (there, it is the step's own container): drop network: so the step reaches the model through its gateway` });
      }
      // The secrets the step will get: its agent's (or the declared credentials the preset takes), and its own.
      const given = new Set([...(agent?.secrets ?? preset.credentials.filter((c) => declaredSecrets.has(c))), ...(step.secrets ?? [])]);
      // a model on this machine takes no key (a model that wants one gets the one declared, as any other)
      if (!(onHost && gated) && !preset.credentials.some((c) => given.has(c)) && !credentialsAsked.has(step.agent!)) {
        credentialsAsked.add(step.agent!);
        issues.push({
          path: ['agents', step.agent!],
          atKey: true,
          message: `agent ${step.agent} uses ${preset.name}, which needs one of ${preset.credentials.join(', ')}: declare it under the top-level secrets: (its value comes from the environment or --secrets-file)${agent?.secrets ? ", and list it in the agent's secrets:" : ''}`,
        });
      }
    }
    if (!hasCommand && !preset && (step.agent === undefined || agent)) {
      issues.push({ path: at(), message: `step "${step.id}" has nothing to run: give it run: (a script) or command: (an argv list)` });
    }
    if (!step.image && !agent?.image && !preset && !p.defaults?.image) {
      issues.push({ path: at(), message: `step "${step.id}" has no image: set image: on the step, its agent or defaults` });
    }

    step.secrets?.forEach((s, j) => {
      if (!declaredSecrets.has(s)) issues.push({ path: at('secrets', j), message: undeclaredSecret(s) });
    });

    for (const { path, value, wholeArgument } of templatedFields(step, i, p)) {
      const found = findExpressions(value);
      for (const f of found) {
        const problem = checkExpression(f, step, i, p, shape, path.length === 3 && path[2] === 'prompt');
        if (problem) issues.push({ path, message: problem });
      }
      if (wholeArgument && found.length > 0 && !isWholeExpression(value)) {
        issues.push({
          path,
          message:
            `in command: an expression must be a whole argument, as in ["printf", "%s", "${found[0]!.raw}"]: spliced into longer text ` +
            `(a script for sh -c, python3 -c, node -e…) its value could become code. Use run: (where values reach the script as ` +
            `environment variables), or pass the value as an argument of its own: ["sh", "-c", "echo \\"$1\\"", "sh", "${found[0]!.raw}"]`,
        });
      }
    }
  });
  return issues;
}

/** Keys a gate may have besides approval: (it runs no container: nothing else of a step applies to it). */
const GATE_KEYS = new Set(['id', 'name', 'approval', 'needs', 'max_visits']);

/** An approval step: a gate, no container; its notify: names entries of the top-level notify:. */
function approvalProblems(step: StepFile, i: number, p: PipelineFile): RuleIssue[] {
  const issues: RuleIssue[] = [];
  for (const key of Object.keys(step)) {
    if (GATE_KEYS.has(key) || (step as Record<string, unknown>)[key] === undefined) continue;
    issues.push({
      path: ['steps', i, key],
      atKey: true,
      message: `step "${step.id}" is an approval gate: it runs nothing, so ${key}: does not apply (a gate has approval:, and may have name:, needs: and max_visits:); put ${key}: on a step of its own`,
    });
  }
  const notify = (p as { notify?: Record<string, unknown> }).notify ?? {};
  step.approval?.notify?.forEach((name, j) => {
    if (!Object.hasOwn(notify, name)) {
      const known = Object.keys(notify);
      issues.push({ path: ['steps', i, 'approval', 'notify', j], message: `unknown notify entry "${name}"${didYouMean(name, known)}; ${known.length ? `known: ${known.join(', ')}` : 'add it under the top-level notify:'}` });
    }
  });
  return issues;
}

const NETWORK_AND_EGRESS =
  'network: and egress: together: egress: puts the step behind a gateway of its own that lets it reach only those hosts, network: gives it a docker network as it is: keep one';

function undeclaredSecret(name: string): string {
  return `secret ${name} is not declared in the top-level secrets: list`;
}

/** Every string of the step (and of its agent, as this step uses it) that may hold expressions; command arguments take only whole ones. */
function templatedFields(step: StepFile, i: number, p: PipelineFile): { path: DocPath; value: string; wholeArgument?: boolean }[] {
  const fields: { path: DocPath; value: string; wholeArgument?: boolean }[] = [];
  const agent = step.agent !== undefined ? p.agents?.[step.agent] : undefined;
  if (step.run !== undefined) fields.push({ path: ['steps', i, 'run'], value: step.run });
  if (step.for_each !== undefined) fields.push({ path: ['steps', i, 'for_each'], value: step.for_each });
  if (step.prompt !== undefined) fields.push({ path: ['steps', i, 'prompt'], value: step.prompt });
  step.command?.forEach((arg, j) => fields.push({ path: ['steps', i, 'command', j], value: arg, wholeArgument: true }));
  for (const [k, v] of Object.entries(step.env ?? {})) fields.push({ path: ['steps', i, 'env', k], value: v });
  if (agent && step.run === undefined && step.command === undefined) {
    if (agent.run !== undefined) fields.push({ path: ['agents', step.agent!, 'run'], value: agent.run });
    agent.command?.forEach((arg, j) => fields.push({ path: ['agents', step.agent!, 'command', j], value: arg, wholeArgument: true }));
  }
  if (agent) {
    for (const [k, v] of Object.entries(agent.env ?? {})) fields.push({ path: ['agents', step.agent!, 'env', k], value: v });
  }
  return fields;
}

function checkExpression(
  found: ReturnType<typeof findExpressions>[number],
  step: StepFile,
  i: number,
  p: PipelineFile,
  shape: FlowShape,
  inPrompt: boolean,
): string | undefined {
  const expr = found.expr;
  if (!expr && /^secrets\.[A-Za-z_][A-Za-z0-9_]*$/.test(found.text)) {
    const name = found.text.slice('secrets.'.length);
    return (
      `${found.raw}: secrets are not expressions here; list ${name} under the top-level secrets: and the step's secrets:, and it reaches ` +
      `the step as the environment variable ${name} ("$${name}" in run:), masked in every log`
    );
  }
  if (!expr) {
    return (
      `unknown expression ${found.raw}: expected \${{ prompt }}, \${{ inputs.<name> }}, \${{ steps.<id>.outputs.<key> }} or (in a for_each step) \${{ item }}` +
      ` (to pass the text itself, as in a GitHub Actions workflow, write $${found.raw})`
    );
  }
  if (expr.kind === 'item') {
    return step.for_each === undefined ? `\${{ item }} is the item of a for_each step: step "${step.id}" has no for_each` : undefined;
  }
  if (expr.kind === 'prompt') {
    if (inPrompt) return `a prompt cannot use \${{ prompt }} (itself)`;
    return step.prompt === undefined ? `step "${step.id}" uses \${{ prompt }} but has no prompt:` : undefined;
  }
  if (expr.kind === 'input') {
    const declared = Object.keys(p.inputs ?? {});
    return declared.includes(expr.name)
      ? undefined
      : `\${{ inputs.${expr.name} }} names an input that is not declared${didYouMean(expr.name, declared)} (add it to the top-level inputs:)`;
  }
  const j = p.steps.findIndex((s) => s.id === expr.step);
  if (j < 0) {
    return `\${{ ${describeExpression(expr)} }} names step "${expr.step}", which does not exist${didYouMean(expr.step, p.steps.map((s) => s.id))}`;
  }
  if (j >= i) {
    return `\${{ ${describeExpression(expr)} }} names step "${expr.step}", which does not run before step "${step.id}"`;
  }
  if (!shape.ancestors[i]!.has(j)) {
    return `\${{ ${describeExpression(expr)} }} names step "${expr.step}", which step "${step.id}" does not need (it may not have run yet): add "${expr.step}" to its needs:`;
  }
  // A gate's outputs are the decision and what the person wrote (src/run/gate.ts).
  const outputs = p.steps[j]!.approval ? [...GATE_OUTPUTS] : (p.steps[j]!.outputs ?? []);
  // An agent preset's step has its final message as output result.
  const fromAgent = expr.key === 'result' && p.agents?.[p.steps[j]!.agent ?? '']?.use !== undefined;
  const gate = p.steps[j]!.approval !== undefined;
  if (!outputs.includes(expr.key) && (expr.key !== 'summary' || gate) && !fromAgent) {
    if (gate) return `\${{ ${describeExpression(expr)} }}: step "${expr.step}" is an approval gate, whose outputs are ${GATE_OUTPUTS.join(', ')}${didYouMean(expr.key, outputs)}`;
    return `\${{ ${describeExpression(expr)} }}: step "${expr.step}" declares no output "${expr.key}"${didYouMean(expr.key, outputs)} (add it to its outputs: list)`;
  }
  return undefined;
}
