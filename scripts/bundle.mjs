// The runner's CLI, made by esbuild from what tsc wrote: its start
// (dist/runner/main.js: src/cli/main.ts, the help, and bundled-commands.ts)
// and its commands as one CommonJS bundle (dist/runner/runner.cjs, from
// src/cli/commands.ts), which the start compiles with V8's code cache
// (src/cli/code-cache.ts). Node reads two files at start instead of several
// hundred, and a start does not parse and compile again what an earlier start
// of the same command did, which was most of the time `runner exec` takes
// before it does anything (measured in bench/). `runner --help` and
// `--version` do not load the bundle; a command loads only its own modules
// (esbuild wraps each in a function called at its first import).
// Libraries that find their own files by __dirname get their path in
// node_modules, relative to the runner's root (dist/runner/../..).
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const root = process.cwd();
const out = 'dist/runner';
await rm(out, { recursive: true, force: true });
const commands = await build({
  entryPoints: { runner: 'dist/src/cli/commands.js' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  // CommonJS: V8's code cache is offered (vm.Script) to it only, in Node 20
  format: 'cjs',
  outdir: out,
  outExtension: { '.js': '.cjs' },
  minify: true,
  sourcemap: 'linked',
  logLevel: 'warning',
  // ssh2's optional native parts: it works without them, as it does unbundled when they did not build
  external: ['*.node', 'cpu-features'],
  // jsonc-parser's main is a UMD whose requires esbuild cannot see: its ES module build instead
  alias: { 'jsonc-parser': './node_modules/jsonc-parser/lib/esm/main.js' },
  // the runner's root (dist/runner/../..), and import.meta.url (package-root.ts) as the bundle's own
  banner: { js: "const __runnerRoot = require('node:path').join(__dirname, '../..') + '/'; const __runnerUrl = require('node:url').pathToFileURL(__filename).href;" },
  define: { 'import.meta.url': '__runnerUrl' },
  metafile: true,
  plugins: [
    {
      // a module with state the start and the commands share (closed-pipe.ts: whether the output closed, who
      // is to hear of it) is the start's one copy: required as runner:NAME, which bundled-commands.ts gives
      name: 'shared',
      setup(b) {
        b.onResolve({ filter: /(^|\/)closed-pipe\.js$/ }, () => ({ path: 'runner:closed-pipe', external: true }));
      },
    },
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

// the start: main.ts with commands.ts's place taken by bundled-commands.ts (which loads runner.cjs); Node's
// built-ins and the runner's own few modules only, so `runner --help` costs nothing more
const start = await build({
  entryPoints: { main: 'dist/src/cli/main.js' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  outdir: out,
  minify: true,
  logLevel: 'warning',
  metafile: true,
  plugins: [
    {
      name: 'bundled-commands',
      setup(b) {
        b.onResolve({ filter: /^\.\/commands\.js$/ }, () => ({ path: path.resolve('dist/src/cli/bundled-commands.js') }));
      },
    },
  ],
});
const inStart = Object.keys(start.metafile.inputs).filter((f) => !/^dist\/src\/(cli\/(main|help|closed-pipe|bundled-commands|code-cache)|common\/package-root)\.js$/.test(f));
if (inStart.length > 0) throw new Error(`the runner's start (dist/runner/main.js) would hold ${inStart.join(', ')}: what it imports belongs in the bundle (src/cli/commands.ts)`);
// a module in both is two copies: only those without state may be
const twice = Object.keys(start.metafile.inputs).filter((f) => f in commands.metafile.inputs && !/^dist\/src\/(cli\/(help|code-cache)|common\/package-root)\.js$/.test(f));
if (twice.length > 0) throw new Error(`${twice.join(', ')} would be both in the start and in the bundle, two copies of its state: share it as closed-pipe.js is (scripts/bundle.mjs)`);
