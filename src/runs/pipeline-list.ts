/**
 * The pipelines under an MCP server's folders, read now: each file with its
 * name and inputs, or its errors. A file whose real path lies outside the
 * folders (a symlink out) is listed with that error and never run.
 */
import { realpath } from 'node:fs/promises';
import { PipelineDir } from './pipeline-dir.js';
import type { PipelineEntry } from './door.js';
import { isUnder } from './folders.js';
import { pipelineProject } from './scope.js';

export async function listPipelineFiles(dirs: string[]): Promise<PipelineEntry[]> {
  const out: PipelineEntry[] = [];
  for (const d of dirs) {
    const dir = new PipelineDir(d);
    await dir.scan();
    const inUse = new Set(dir.pipelines());
    for (const st of dir.states()) {
      const real = (await realpath(st.file).catch(() => undefined)) ?? st.file;
      const outside = !dirs.some((r) => isUnder(real, r));
      const loaded = st.loaded && inUse.has(st.loaded) && !outside ? st.loaded : undefined;
      out.push({
        file: real,
        name: loaded?.pipeline.name ?? null,
        ...(loaded?.pipeline.description ? { description: loaded.pipeline.description } : {}),
        inputs: loaded?.pipeline.inputs ?? {},
        errors: outside ? [`${st.file} leads to ${real}, outside the pipelines folders: it is not run`] : st.errors,
      });
    }
  }
  return out;
}

/** The projects (real paths) of the usable pipelines under the folders: what runner mcp serves of them (scope.ts). */
export async function pipelineProjects(dirs: string[]): Promise<string[]> {
  const out = new Set<string>();
  for (const d of dirs) {
    const dir = new PipelineDir(d);
    await dir.scan();
    for (const loaded of dir.pipelines()) {
      const real = (await realpath(loaded.file).catch(() => undefined)) ?? loaded.file;
      if (dirs.some((r) => isUnder(real, r))) out.add(await pipelineProject(loaded));
    }
  }
  return [...out];
}
