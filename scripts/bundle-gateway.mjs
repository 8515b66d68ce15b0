// The gateway as one file for its image (runner/gateway carries no node_modules):
// esbuild bundles what tsc wrote in dist/src/gateway with the libraries it uses
// (the run CA's X.509 builder) into dist/src/gateway/gateway-bundle.js. It sits
// beside the code it was made from, so the image's version (the hash of
// dist/src/gateway/*.js and the transfer helper's source: images/build.sh,
// src/gateway/host/image.ts) covers the libraries' code as well as ours.
import { build } from 'esbuild';

await build({
  entryPoints: ['dist/src/gateway/main.js'],
  outfile: 'dist/src/gateway/gateway-bundle.js',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  // CommonJS libraries in an ES module: their require of Node's own modules
  banner: { js: "import { createRequire as __gatewayRequire } from 'node:module'; const require = __gatewayRequire(import.meta.url);" },
});
