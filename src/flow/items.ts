/** A for_each list: a JSON array of strings, within the step's bound. Pure. */

export const DEFAULT_MAX_ITEMS = 20;

export type ParsedItems = { items: string[] } | { problem: string };

export function parseItems(text: string | undefined, maxItems: number): ParsedItems {
  if (text === undefined || text.trim() === '') return { problem: 'it is empty (expected a JSON list of strings, like ["api", "ui"])' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { problem: `it is not JSON (expected a JSON list of strings, like ["api", "ui"]; got ${preview(text)})` };
  }
  if (!Array.isArray(value)) return { problem: `it is not a JSON list (expected a list of strings, like ["api", "ui"]; got ${preview(text)})` };
  const bad = value.findIndex((v) => typeof v !== 'string');
  if (bad >= 0) return { problem: `item ${bad} is not a string (got ${preview(JSON.stringify(value[bad]) ?? String(value[bad]))}): each item must be a string` };
  if (value.length > maxItems) return { problem: `it has ${value.length} items, more than the ${maxItems} the step takes (max_items: ${maxItems})` };
  return { items: value as string[] };
}

function preview(s: string): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return JSON.stringify(one.length > 60 ? `${one.slice(0, 59)}…` : one);
}
