/**
 * The shape of a pipeline's flow: what each step needs, which steps may run
 * at once (and so work in a worktree of their own), and which steps a route
 * runs again. Built from the file's steps alone. Pure.
 *
 *   needs      a step runs once every step it needs has succeeded; without
 *              `needs:` it needs the step before it in the file
 *   lane       a step that may run at once with another (or a for_each step):
 *              it works on a branch of its own, merged back when it ends
 *   body       a route from S back to T runs again T, S and every step
 *              between them (needs T and is needed by S)
 */

export interface FlowStepInput {
  id: string;
  needs?: string[];
  for_each?: string;
}

export interface FlowShape {
  ids: string[];
  /** each step's needs, defaults filled in (indexes into ids) */
  needs: number[][];
  /** ancestors[i]: every step i needs, directly or through others */
  ancestors: Set<number>[];
  /** the steps that may run at the same time as another, or fan out */
  lanes: boolean[];
}

export function flowShape(steps: readonly FlowStepInput[]): FlowShape {
  const ids = steps.map((s) => s.id);
  const index = new Map(ids.map((id, i) => [id, i]));
  // Only earlier steps count (validation refuses the others): the file order is an order of the graph.
  const needs = steps.map((s, i) =>
    s.needs === undefined ? (i > 0 ? [i - 1] : []) : [...new Set(s.needs.map((n) => index.get(n)).filter((j): j is number => j !== undefined && j < i))],
  );
  const ancestors: Set<number>[] = [];
  needs.forEach((direct, i) => {
    const all = new Set<number>();
    for (const j of direct) {
      all.add(j);
      for (const k of ancestors[j]!) all.add(k);
    }
    ancestors[i] = all;
  });
  const ordered = (a: number, b: number) => ancestors[a]!.has(b) || ancestors[b]!.has(a);
  const lanes = steps.map((s, i) => s.for_each !== undefined || ids.some((_, j) => j !== i && !ordered(i, j)));
  return { ids, needs, ancestors, lanes };
}

/** The steps a route from `from` to `to` runs again, in file order: `to`, `from`, and each step between them. */
export function routeBody(shape: FlowShape, from: number, to: number): number[] {
  return shape.ids
    .map((_, i) => i)
    .filter((i) => i === to || i === from || (shape.ancestors[i]!.has(to) && shape.ancestors[from]!.has(i)));
}

/** The steps that need `i`, directly or through others. */
export function descendants(shape: FlowShape, i: number): number[] {
  return shape.ids.map((_, j) => j).filter((j) => shape.ancestors[j]!.has(i));
}

/** Whether two steps may run at the same time (neither needs the other). */
export function mayRunTogether(shape: FlowShape, a: number, b: number): boolean {
  return a !== b && !shape.ancestors[a]!.has(b) && !shape.ancestors[b]!.has(a);
}
