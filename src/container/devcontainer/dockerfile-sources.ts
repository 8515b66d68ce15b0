/**
 * Which files of a build's context a Dockerfile reads: the sources of its COPY and ADD (not `--from=` another stage
 * or image), as patterns relative to the context. The preparation's key hashes those files, not the whole context
 * (a context of `..` is the whole project, and a change to any source file must not prepare the image again). Pure.
 */

/** The source patterns of every COPY/ADD of the Dockerfile's text; `['.']` (all of it) for `COPY . x`. */
export function dockerfileSources(text: string): string[] {
  const out: string[] = [];
  // line continuations joined first
  const lines = text.replace(/\\\r?\n/g, ' ').split(/\r?\n/);
  for (const raw of lines) {
    const line = raw.trim();
    const m = /^(COPY|ADD)\s+(.*)$/i.exec(line);
    if (!m) continue;
    let rest = m[2]!.trim();
    const flags: string[] = [];
    while (rest.startsWith('--')) {
      const sp = rest.search(/\s/);
      flags.push(sp === -1 ? rest : rest.slice(0, sp));
      rest = sp === -1 ? '' : rest.slice(sp).trim();
    }
    if (flags.some((f) => f.startsWith('--from'))) continue;
    let args: string[];
    if (rest.startsWith('[')) {
      try {
        args = (JSON.parse(rest) as unknown[]).map(String);
      } catch {
        args = rest.split(/\s+/);
      }
    } else args = rest.split(/\s+/).filter(Boolean);
    // heredocs and URLs read nothing of the context
    for (const src of args.slice(0, -1)) if (!src.startsWith('<<') && !/^[a-z]+:\/\//i.test(src)) out.push(normalize(src));
  }
  return [...new Set(out)];
}

function normalize(src: string): string {
  let s = src.replace(/^\.\/+/, '').replace(/\/+$/, '');
  if (s === '' || s === '.') s = '.';
  return s;
}

/**
 * The images a Dockerfile builds FROM (not `scratch`, not an earlier stage, not one named through an ARG): pulled
 * by the runner before the build, with the user's registry credentials, so the engine's build finds them present.
 */
export function dockerfileBases(text: string): string[] {
  const stages = new Set<string>();
  const out: string[] = [];
  for (const raw of text.replace(/\\\r?\n/g, ' ').split(/\r?\n/)) {
    const m = /^\s*FROM\s+(.*)$/i.exec(raw);
    if (!m) continue;
    const words = m[1]!.trim().split(/\s+/).filter((w) => !w.startsWith('--'));
    const image = words[0];
    if (words[1]?.toLowerCase() === 'as' && words[2]) stages.add(words[2].toLowerCase());
    if (!image || image === 'scratch' || image.includes('$') || stages.has(image.toLowerCase())) continue;
    if (!out.includes(image)) out.push(image);
  }
  return out;
}
