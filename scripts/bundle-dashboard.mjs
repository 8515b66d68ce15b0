// The dashboard for the browser: its modules (src/serve/dashboard/app.js and
// what it imports, libraries included) bundled by esbuild into one script,
// dist/src/serve/dashboard/app.js, beside its page and style sheets, which
// dashboard.ts serves under /assets/. One file and no inline code: the page's
// Content-Security-Policy allows scripts and styles from 'self' only.
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const src = 'src/serve/dashboard';
const out = 'dist/src/serve/dashboard';
await rm(out, { recursive: true, force: true });
await mkdir(out, { recursive: true });
for (const f of await readdir(src)) if (/\.(html|css|svg)$/.test(f)) await copyFile(path.join(src, f), path.join(out, f));
// diff2html's style sheet, for the diff viewer's d2h-* classes
await copyFile('node_modules/diff2html/bundles/css/diff2html.min.css', path.join(out, 'diff2html.css'));
await build({
  entryPoints: [path.join(src, 'app.js')],
  bundle: true,
  platform: 'browser',
  target: 'es2022',
  format: 'esm',
  outfile: path.join(out, 'app.js'),
  minify: true,
  legalComments: 'eof',
  logLevel: 'warning',
});
