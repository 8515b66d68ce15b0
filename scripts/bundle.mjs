// The runner's CLI as one bundle (dist/runner/main.js, its commands as lazily
// loaded chunks), made by esbuild from what tsc wrote: Node then reads a
// handful of files at start instead of several hundred, which is most of the
// time `runner exec` takes before it does anything (measured in bench/).
// Libraries that find their own files by __dirname get their path in
// node_modules, relative to the runner's root (dist/runner/../..).
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const root = process.cwd();
const out = 'dist/runner';
await rm(out, { recursive: true, force: true });
await build({
  entryPoints: { main: 'dist/src/cli/main.js' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  splitting: true,
  outdir: out,
  minify: true,
  sourcemap: 'linked',
  logLevel: 'warning',
  // ssh2's optional native parts: it works without them, as it does unbundled when they did not build
  external: ['*.node', 'cpu-features'],
  // jsonc-parser's main is a UMD whose requires esbuild cannot see: its ES module build instead
  alias: { 'jsonc-parser': './node_modules/jsonc-parser/lib/esm/main.js' },
  // every output file: a require for the libraries that use it, and the runner's root (dist/runner/../..)
  banner: { js: "import { createRequire as __runnerRequire } from 'node:module'; const require = __runnerRequire(import.meta.url); import { fileURLToPath as __runnerPath } from 'node:url'; const __runnerRoot = __runnerPath(new URL('../..', import.meta.url));" },
  plugins: [
    {
      // dockerode loads gRPC and protobufjs (for BuildKit sessions) and ssh2 (for ssh:// engines) at
      // start; the runner needs them only when used, so they are loaded then (a third of its start),
      // and not bundled (parsing them was most of what was left of it).
      name: 'lazy',
      setup(b) {
        // required from node_modules when first used, by a path esbuild does not follow: their code (gRPC,
        // protobufjs, ssh2: 800 KB) is then not in the bundle at all, so no runner start parses it
        const fromRoot = (file) => `require(__runnerRoot + 'node_modules/${file}')`;
        const lazy = {
          'dockerode/lib/docker.js': [
            ["withSession = require('./session')", `withSession = function () { return ${fromRoot('dockerode/lib/session.js')}.apply(this, arguments); }`],
            // Docker.followProgress (BuildKit's protobuf); the runner uses modem.followProgress
            ["var buildkit = require('./buildkit');", `var buildkit = ${fromRoot('dockerode/lib/buildkit.js')};`],
          ],
          'docker-modem/lib/modem.js': [["ssh = require('./ssh')", `ssh = function () { return ${fromRoot('docker-modem/lib/ssh.js')}.apply(this, arguments); }`]],
        };
        b.onLoad({ filter: /[\\/]node_modules[\\/](dockerode|docker-modem)[\\/]lib[\\/](docker|modem)\.js$/ }, async (a) => {
          const key = Object.keys(lazy).find((k) => a.path.endsWith(k.split('/').join(path.sep)));
          let text = await readFile(a.path, 'utf8');
          for (const [from, to] of lazy[key]) {
            if (!text.includes(from)) throw new Error(`${a.path} no longer has ${from}: update scripts/bundle.mjs`);
            text = text.replace(from, to);
          }
          return { contents: text, loader: 'js' };
        });
      },
    },
    {
      name: 'dirname',
      setup(b) {
        b.onLoad({ filter: /[\\/]node_modules[\\/].*\.js$/ }, async (a) => {
          const text = await readFile(a.path, 'utf8');
          if (!/\b__(dirname|filename)\b/.test(text)) return undefined;
          // relative to the runner's root, so the bundle works wherever the runner is installed with its node_modules
          const at = (p) => `(__runnerRoot + ${JSON.stringify(path.relative(root, p).split(path.sep).join('/'))})`;
          return { contents: text.replace(/\b__dirname\b/g, at(path.dirname(a.path))).replace(/\b__filename\b/g, at(a.path)), loader: 'js' };
        });
      },
    },
  ],
});
