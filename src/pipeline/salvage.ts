/**
 * What can be kept of a file the schema refused, so that the named rules
 * still run on the parts that have their shape: every problem of a file is
 * reported at once, not a typo first and a bad reference after it is fixed.
 * Each field of the top level, of `defaults`, of each agent and of each step
 * is kept when it is valid on its own (unknown keys dropped), left out when
 * not. Pure.
 */
import type { z } from 'zod';
import { agentSchema, pipelineSchema, stepSchema, stepSettings, type PipelineFile } from './schema.js';

type Shape = Record<string, z.ZodType>;

function salvage(shape: Shape, raw: unknown): Record<string, unknown> {
  const obj = raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(shape)) {
    const r = schema.safeParse(Object.hasOwn(obj, key) ? obj[key] : undefined);
    if (r.success && r.data !== undefined) out[key] = r.data;
  }
  return out;
}

export function salvagePipeline(data: Record<string, unknown>): PipelineFile {
  const top = salvage(pipelineSchema.shape as unknown as Shape, data);
  top.name ??= 'pipeline';
  top.defaults = salvage(stepSettings as unknown as Shape, data.defaults);
  const agents = data.agents !== null && typeof data.agents === 'object' && !Array.isArray(data.agents) ? (data.agents as Record<string, unknown>) : {};
  top.agents = Object.fromEntries(Object.entries(agents).map(([name, a]) => [name, salvage(agentSchema.shape as unknown as Shape, a)]));
  const steps = Array.isArray(data.steps) ? data.steps : [];
  top.steps = steps.map((s, i) => {
    const step = salvage(stepSchema.shape as unknown as Shape, s);
    // An id that is not valid still names the step for references to it.
    const rawId = (s as { id?: unknown } | null)?.id;
    step.id ??= typeof rawId === 'string' ? rawId : `#${i}`;
    return step;
  });
  return top as unknown as PipelineFile;
}
