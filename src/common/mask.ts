/**
 * Replaces secret values, and the well-known token shapes, with `***`.
 * Applied to whole lines so that a secret split across output chunks is
 * still caught once the line is complete. Pure.
 */

const TOKEN_SHAPES: RegExp[] = [
  /sk-ant-[A-Za-z0-9_-]{10,}/g,
  /sk-[A-Za-z0-9_-]{20,}/g,
  /ghp_[A-Za-z0-9]{20,}/g,
  /github_pat_[A-Za-z0-9_]{20,}/g,
  /AKIA[0-9A-Z]{16}/g,
  /AIza[0-9A-Za-z_-]{30,}/g,
  /xox[abposr]-[A-Za-z0-9-]{10,}/g,
];

export const MASK = '***';

export class Masker {
  private readonly values: string[];

  /** Values shorter than 4 characters are not masked: they would mask every other word. */
  constructor(secretValues: Iterable<string>) {
    this.values = [...new Set([...secretValues].filter((v) => v.length >= 4))].sort((a, b) => b.length - a.length);
  }

  /** the length of the longest secret value */
  get longest(): number {
    return this.values[0]?.length ?? 0;
  }

  mask(text: string): string {
    let out = text;
    for (const v of this.values) out = out.split(v).join(MASK);
    for (const re of TOKEN_SHAPES) out = out.replace(re, MASK);
    return out;
  }
}
