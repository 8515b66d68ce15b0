/**
 * `runner images push --registry HOST:PORT [IMAGE...] [--json]`: the runner's
 * own images (default: every runner/* image this engine has, each tag) into
 * the registry a swarm's nodes pull from, with their tags and versions;
 * prints each one's digest, which `--engine swarm --registry` names it by.
 * The pushing itself is src/container/registry.ts.
 */
import { errorMessage, UsageError } from '../common/errors.js';
import { formatSize } from '../common/durations.js';
import { visible } from '../common/visible.js';
import { localOwnImages, pushOwnImages, type PushProgress } from '../container/registry.js';
import { parseRegistry } from '../container/registry-names.js';
import { DockerRuntime } from '../container/local/docker.js';
import { parseFlags } from './args.js';
import { printTable } from './table.js';

export async function imagesCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'push') return push(rest);
  throw new UsageError(`images: expected push, got ${sub === undefined ? 'nothing' : JSON.stringify(sub)} (runner --help)`);
}

async function push(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('images push', args, { registry: { type: 'string' }, json: { type: 'boolean', default: false } }, 'any');
  const given = values.registry || process.env.RUNNER_REGISTRY;
  if (!given) throw new UsageError('images push: --registry HOST:PORT is required (or RUNNER_REGISTRY): the registry the swarm\'s nodes pull from (runner --help)');
  let registry: string;
  try {
    registry = parseRegistry(given);
  } catch (err) {
    throw new UsageError(`images push: ${errorMessage(err)}`);
  }
  await new DockerRuntime().ping();
  const images = positionals.length ? positionals : await localOwnImages();
  if (!images.length) throw new UsageError("images push: this engine has none of the runner's own images (runner/*): build them with `make images` in the runner's directory");

  const progress = progressPrinter(process.stderr);
  const pushed = await pushOwnImages(registry, images, progress.update).finally(progress.done);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(pushed, null, 2)}\n`);
    return 0;
  }
  printTable([['IMAGE', 'PUSHED AS', 'DIGEST'], ...pushed.map((p) => [p.image, p.tags.join(', '), p.digest])]);
  process.stdout.write(`\nrun on the swarm with these: runner exec FILE --engine swarm --registry ${registry} (a node pulls ${pushed[0]!.pinned.replace(/@.*/, '@sha256:…')})\n`);
  return 0;
}

/** Progress on stderr: a line rewritten in place on a terminal, else a line per image and one every few seconds. */
function progressPrinter(out: NodeJS.WriteStream): { update: (p: PushProgress) => void; done: () => void } {
  const tty = out.isTTY === true;
  let current = '';
  let lastAt = 0;
  let shown = '';
  const line = (p: PushProgress) => {
    const pct = p.bytesKnown > 0 ? `${Math.floor((100 * p.bytesDone) / p.bytesKnown)}% of ${formatSize(p.bytesKnown)}, ` : '';
    return `${p.image} → ${p.target}: ${pct}${p.layersDone}/${p.layers} layers`;
  };
  return {
    update: (p) => {
      const text = visible(line(p));
      if (tty) {
        if (text !== shown) out.write(`\r\x1b[K${text}`);
        shown = text;
        return;
      }
      const now = Date.now();
      if (p.target !== current) {
        current = p.target;
        out.write(`pushing ${visible(p.image)} to ${visible(p.target)}\n`);
        lastAt = now;
      } else if (now - lastAt >= 5000) {
        out.write(`${text}\n`);
        lastAt = now;
      }
    },
    done: () => {
      if (tty && shown) out.write('\r\x1b[K');
    },
  };
}
