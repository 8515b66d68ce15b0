/**
 * The directory name of a project's caches in the runner home: its real
 * path's hash, so two projects never share one (whatever their pipelines are
 * called), with the folder's name in front for people. Pure.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';

export function projectKey(realRoot: string): string {
  const slug = path.basename(realRoot).replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '').slice(0, 40) || 'project';
  return `${slug}-${createHash('sha256').update(realRoot).digest('hex').slice(0, 16)}`;
}
