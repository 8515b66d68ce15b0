/**
 * What can be kept of a file the schema refused, so that the named rules
 * still run on the parts that have their shape: every problem of a file is
 * reported at once, not a typo first and a bad reference after it is fixed.
 * A value the schema refuses is taken apart as far as it goes: an object
 * field by field (unknown keys dropped), a list and a map element by
 * element, so one bad input, secret name, output or schedule entry does not
 * take its valid neighbours with it (and cause false "not declared" errors).
 * Pure.
 */
import type { z } from 'zod';
import { pipelineSchema, stepSchema, type PipelineFile } from './schema.js';

interface Def {
  type: string;
  innerType?: z.ZodType;
  element?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  options?: z.ZodType[];
}

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The value as the schema takes it, or the parts of it that are valid; undefined when nothing is. */
export function salvageValue(schema: z.ZodType, raw: unknown): unknown {
  const whole = schema.safeParse(raw);
  if (whole.success) return whole.data;
  const def = defOf(schema);
  if ((def.type === 'optional' || def.type === 'default' || def.type === 'nullable') && def.innerType) return raw === undefined ? undefined : salvageValue(def.innerType, raw);
  if (def.type === 'array' && def.element && Array.isArray(raw)) return raw.map((x) => salvageValue(def.element!, x)).filter((x) => x !== undefined);
  if (def.type === 'record' && def.keyType && def.valueType && isObject(raw)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(raw)) {
      if (!def.keyType.safeParse(k).success) continue;
      const value = salvageValue(def.valueType, v);
      if (value !== undefined) out[k] = value;
    }
    return out;
  }
  if (def.type === 'object' && def.shape && isObject(raw)) return salvageFields(def.shape, raw);
  // a union (an egress entry: a host, or { host, methods, paths }): what the first option that keeps something keeps
  if (def.type === 'union' && def.options) {
    for (const option of def.options) {
      const kept = salvageValue(option, raw);
      if (kept !== undefined) return kept;
    }
  }
  return undefined;
}

function salvageFields(shape: Record<string, z.ZodType>, raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(shape)) {
    const value = Object.hasOwn(raw, key) ? salvageValue(schema, raw[key]) : (() => {
      const r = schema.safeParse(undefined); // a default
      return r.success ? r.data : undefined;
    })();
    if (value !== undefined) out[key] = value;
  }
  return out;
}

export function salvagePipeline(data: Record<string, unknown>): PipelineFile {
  const { steps: _steps, ...topShape } = pipelineSchema.shape;
  const top = salvageFields(topShape as unknown as Record<string, z.ZodType>, data);
  top.name ??= 'pipeline';
  // Steps one by one, each keeping its place (paths name steps by index); an id that is not valid still names it.
  const steps = Array.isArray(data.steps) ? data.steps : [];
  top.steps = steps.map((s, i) => {
    const step = isObject(s) ? salvageFields(stepSchema.shape as unknown as Record<string, z.ZodType>, s) : {};
    const rawId = isObject(s) ? s.id : undefined;
    step.id ??= typeof rawId === 'string' ? rawId : `#${i}`;
    return step;
  });
  return top as unknown as PipelineFile;
}
