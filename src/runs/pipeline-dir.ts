/**
 * The pipelines folder `runner serve` watches: every *.yaml / *.yml in it
 * that is a pipeline (looks-like.ts: a top-level `steps:` or `version: 1`; a
 * project's `.eslintrc.yml` beside its runner.yaml is not one and is left
 * alone), loaded and validated; rescanned on change. A file that no longer validates
 * keeps its last good version (and shows its errors); a removed file's
 * pipeline goes; two files with one pipeline name: the later is refused.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, PipelineError, formatPipelineIssue } from '../common/errors.js';
import { parseLoaded, readPipelineText, type LoadedPipeline } from '../pipeline/load.js';
import { looksLikePipeline } from '../pipeline/looks-like.js';

export interface PipelineFileState {
  file: string;
  /** the last version that validated, if any */
  loaded?: LoadedPipeline;
  /** why the file on disk is not (or no longer) in use */
  errors: string[];
  stamp: string;
}

export class PipelineDir {
  private files = new Map<string, PipelineFileState>();
  /** files that are not pipelines, by their stamp when read (not read again until they change) */
  private others = new Map<string, string>();

  constructor(readonly dir: string) {}

  /** Reads what changed since the last scan; true when the set of good pipelines changed. */
  async scan(): Promise<boolean> {
    const names = (await readdir(this.dir).catch(() => [] as string[])).filter((n) => /\.ya?ml$/.test(n)).sort();
    let changed = false;
    const seen = new Set<string>();
    for (const name of names) {
      const file = path.join(this.dir, name);
      seen.add(file);
      const st = await stat(file).catch(() => undefined);
      if (!st?.isFile()) continue;
      const stamp = `${st.mtimeMs}:${st.size}`;
      const before = this.files.get(file);
      if (before?.stamp === stamp) continue;
      if (this.others.get(file) === stamp) {
        seen.delete(file);
        continue;
      }
      const state: PipelineFileState = { file, errors: [], stamp, ...(before?.loaded ? { loaded: before.loaded } : {}) };
      try {
        const text = await readPipelineText(file);
        if (!looksLikePipeline(text)) {
          // another tool's file: not listed, not an error (it goes if it was a pipeline before)
          this.others.set(file, stamp);
          seen.delete(file);
          continue;
        }
        this.others.delete(file);
        state.loaded = parseLoaded(file, text);
      } catch (err) {
        state.errors =
          err instanceof PipelineError ? err.issues.map((i) => formatPipelineIssue(file, i)) : [`${file}: ${errorMessage(err)}`];
      }
      this.files.set(file, state);
      changed = true;
    }
    for (const file of [...this.files.keys()]) {
      if (!seen.has(file)) {
        this.files.delete(file);
        changed = true;
      }
    }
    if (changed) this.refuseDuplicates();
    return changed;
  }

  /** The pipelines in use, by name. */
  pipelines(): LoadedPipeline[] {
    return [...this.files.values()].filter((s) => s.loaded && !s.errors.some((e) => e.includes('duplicate pipeline name'))).map((s) => s.loaded!);
  }

  states(): PipelineFileState[] {
    return [...this.files.values()];
  }

  private refuseDuplicates(): void {
    const owner = new Map<string, string>();
    for (const s of this.states()) {
      s.errors = s.errors.filter((e) => !e.includes('duplicate pipeline name'));
      const name = s.loaded?.pipeline.name;
      if (!name) continue;
      const first = owner.get(name);
      if (first) s.errors.push(`${s.file}: duplicate pipeline name "${name}" (also in ${first}); this file is not used`);
      else owner.set(name, s.file);
    }
  }
}
