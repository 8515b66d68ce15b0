/**
 * `${{ ... }}` expressions in env values, run scripts and command arguments.
 * Four forms exist: `${{ prompt }}`, `${{ inputs.<name> }}`,
 * `${{ steps.<id>.outputs.<key> }}` and, in a for_each step, `${{ item }}`;
 * `$${{` is the literal text `${{`. Pure.
 */

export type Expression =
  | { kind: 'prompt' }
  | { kind: 'item' }
  | { kind: 'input'; name: string }
  | { kind: 'output'; step: string; key: string };

export interface Found {
  /** the whole `${{ ... }}` text */
  raw: string;
  /** the text between the braces, trimmed */
  text: string;
  /** undefined when the text is not a known expression */
  expr?: Expression;
}

// `$${{ … }}` is an escape: it stands for the text `${{ … }}` (a prompt about GitHub Actions, say).
const EXPR_RE = /(\$?)\$\{\{\s*(.*?)\s*\}\}/g;
const OUTPUT_RE = /^steps\.([a-z0-9_-]+)\.outputs\.([A-Za-z_][A-Za-z0-9_]*)$/;
const INPUT_RE = /^inputs\.([A-Za-z_][A-Za-z0-9_]*)$/;

export function parseExpression(text: string): Expression | undefined {
  if (text === 'prompt') return { kind: 'prompt' };
  if (text === 'item') return { kind: 'item' };
  const input = INPUT_RE.exec(text);
  if (input) return { kind: 'input', name: input[1]! };
  const m = OUTPUT_RE.exec(text);
  return m ? { kind: 'output', step: m[1]!, key: m[2]! } : undefined;
}

/** The value is one expression and nothing else: `${{ inputs.x }}`, not `--x=${{ inputs.x }}` nor `echo ${{ inputs.x }}`. */
export function isWholeExpression(value: string): boolean {
  const found = findExpressions(value);
  return found.length === 1 && found[0]!.raw === value;
}

export function findExpressions(value: string): Found[] {
  return [...value.matchAll(EXPR_RE)].filter((m) => m[1] === '').map((m) => {
    const text = m[2]!;
    const expr = parseExpression(text);
    return expr ? { raw: m[0], text, expr } : { raw: m[0], text };
  });
}

/** Replaces every expression by what `resolve` returns for it. */
export function renderTemplate(value: string, resolve: (expr: Expression) => string): string {
  return value.replace(EXPR_RE, (raw: string, escape: string, text: string) => {
    if (escape) return raw.slice(1);
    const expr = parseExpression(text);
    if (!expr) throw new Error(`unknown expression ${raw}`);
    return resolve(expr);
  });
}

/**
 * For `run:` scripts: the values never become shell code. Each expression is
 * replaced by a reference to an environment variable that carries its value,
 * so a hostile output of an earlier step cannot inject commands.
 */
export function renderScript(
  script: string,
  resolve: (expr: Expression) => string,
): { script: string; env: Record<string, string> } {
  const env: Record<string, string> = {};
  let n = 0;
  const out = script.replace(EXPR_RE, (raw: string, escape: string, text: string) => {
    if (escape) return raw.slice(1);
    const expr = parseExpression(text);
    if (!expr) throw new Error(`unknown expression ${raw}`);
    const name = `RUNNER_EXPR_${n++}`;
    env[name] = resolve(expr);
    return `\${${name}}`;
  });
  return { script: out, env };
}

export function describeExpression(expr: Expression): string {
  if (expr.kind === 'prompt' || expr.kind === 'item') return expr.kind;
  if (expr.kind === 'input') return `inputs.${expr.name}`;
  return `steps.${expr.step}.outputs.${expr.key}`;
}
