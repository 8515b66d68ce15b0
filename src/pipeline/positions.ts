/** Maps a path inside a parsed YAML document to a line and column. Pure. */
import { isMap, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';

export type DocPath = ReadonlyArray<string | number>;

/** `['steps', 1, 'resources', 'memory']` → `steps[1].resources.memory` */
export function formatPath(path: DocPath): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${seg}` : seg;
  }
  return out;
}

/**
 * The line and column of the deepest node that exists along `path`;
 * with `atKey`, of the key of the last segment rather than its value.
 */
export function positionOf(
  doc: Document,
  lines: LineCounter,
  path: DocPath,
  atKey = false,
): { line: number; col: number } | undefined {
  let node: unknown = doc.contents;
  let found: Node | undefined = isNode(node) ? node : undefined;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) break;
      if (last && atKey && isNode(pair.key)) {
        found = pair.key;
        break;
      }
      node = pair.value;
      if (isNode(node)) found = node;
      else if (isNode(pair.key)) found = pair.key;
    } else if (isSeq(node) && typeof seg === 'number') {
      node = node.items[seg];
      if (!isNode(node)) break;
      found = node;
    } else {
      break;
    }
  }
  const offset = found?.range?.[0];
  if (offset === undefined) return undefined;
  return lines.linePos(offset);
}

function isNode(v: unknown): v is Node {
  return typeof v === 'object' && v !== null && 'range' in v;
}
