/**
 * `runner cache ls [--project DIR] [--json]` and `runner cache prune
 * (--project DIR | --cache NAME | --unused-for 30d | --all)`: the projects'
 * dependency caches in the runner home (src/cache/). A cache in use by a
 * live run is shown with the size it had when last measured, and is never
 * removed under it.
 */
import { formatSize, parseDuration } from '../common/durations.js';
import { UsageError } from '../common/errors.js';
import { listCaches, removeCaches, type CacheFilter } from '../cache/manage.js';
import { ownerAlive } from '../run/owner-lock.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';
import { printTable } from './table.js';

export async function cacheCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'ls') return ls(rest);
  if (sub === 'prune') return prune(rest);
  throw new UsageError(`cache: expected ls or prune, got ${sub === undefined ? 'nothing' : JSON.stringify(sub)} (runner --help)`);
}

const common = { home: { type: 'string' }, project: { type: 'string' }, cache: { type: 'string' } } as const;

async function ls(args: string[]): Promise<number> {
  const { values } = parseFlags('cache ls', args, { ...common, json: { type: 'boolean', default: false } }, []);
  // reconciled first: a crashed run's containers are gone, so its caches are free
  const home = await openHome(values.home, { quiet: values.json });
  const rows = await listCaches(home.root, filter(values), (id) => ownerAlive(home.root, id));
  if (values.json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return 0;
  }
  if (!rows.length) {
    process.stdout.write(`no caches in ${home.root}/caches (a step gets one with cache: in its pipeline)\n`);
    return 0;
  }
  printTable([
    ['PROJECT', 'CACHE', 'SIZE', 'MAX', 'LAST USED', 'STATE'],
    ...rows.map((r) => [r.project, r.name, r.bytes === null ? '?' : formatSize(r.bytes), formatSize(r.maxBytes), r.lastUsed ?? '-', r.busy ?? 'idle']),
  ]);
  return 0;
}

async function prune(args: string[]): Promise<number> {
  const { values } = parseFlags('cache prune', args, { ...common, 'unused-for': { type: 'string' }, all: { type: 'boolean', default: false } }, []);
  const f = filter(values);
  if (!values.all && f.project === undefined && f.name === undefined && f.unusedForMs === undefined) {
    throw new UsageError('cache prune: say which caches: --project DIR, --cache NAME, --unused-for 30d (any of them together), or --all');
  }
  const home = await openHome(values.home);
  const outcomes = await removeCaches(home.root, f, (id) => ownerAlive(home.root, id));
  if (!outcomes.length) {
    process.stdout.write('no cache matched\n');
    return 0;
  }
  for (const o of outcomes) {
    process.stdout.write(o.kept ? `kept ${o.name} of ${o.project}: ${o.kept}\n` : `removed ${o.name} of ${o.project} (${formatSize(o.freed ?? 0)})\n`);
  }
  return outcomes.some((o) => o.kept) ? 1 : 0;
}

function filter(values: { project?: string | undefined; cache?: string | undefined; 'unused-for'?: string | undefined }): CacheFilter {
  const f: CacheFilter = {};
  if (values.project !== undefined) f.project = values.project;
  if (values.cache !== undefined) f.name = values.cache;
  if (values['unused-for'] !== undefined) {
    const ms = parseDuration(values['unused-for']);
    if (ms === undefined) throw new UsageError(`cache prune: --unused-for expects a duration like 30d or 12h, got ${JSON.stringify(values['unused-for'])}`);
    f.unusedForMs = ms;
  }
  return f;
}
