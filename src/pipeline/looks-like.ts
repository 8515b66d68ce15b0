/**
 * Whether a YAML file in a pipelines folder is meant as a pipeline at all: a
 * folder `runner serve --pipelines` watches may be a project's root, where
 * `.eslintrc.yml`, `docker-compose.yml` or `.pre-commit-config.yaml` lie beside
 * `runner.yaml`. A pipeline has a top-level `steps:` (the schema requires it)
 * or says `version: 1`; a file with neither is someone else's and is left
 * alone. Read on the text, line by line, so a pipeline whose YAML is broken is
 * still taken for one (and its errors shown). Pure.
 */
export function looksLikePipeline(text: string): boolean {
  return /^steps[ \t]*:/m.test(text) || /^version[ \t]*:[ \t]*(1|"1"|'1')[ \t]*(#.*)?$/m.test(text);
}
