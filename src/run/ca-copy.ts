/**
 * The CA bundle a run's steps mount: a copy in the runner home (the engine
 * sees the home where the runner does, in compose too; the file the user
 * named may be anywhere), named by its content, so runs at once share one
 * and a changed bundle never changes under a running step.
 */
import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../common/atomic-write.js';
import type { CompanyNetwork } from '../plan/company-network.js';

export async function companyNetworkOnDisk(home: string, n: CompanyNetwork): Promise<CompanyNetwork> {
  if (!n.ca) return n;
  const dir = path.join(home, 'network');
  const file = path.join(dir, `ca-${createHash('sha256').update(n.ca.pem).digest('hex').slice(0, 16)}.pem`);
  await mkdir(dir, { recursive: true });
  const there = await readFile(file, 'utf8').catch(() => undefined);
  if (there !== n.ca.pem) await writeFileAtomic(file, n.ca.pem);
  // every step's user reads it, whoever it runs as
  await chmod(file, 0o644);
  return { ...n, ca: { ...n.ca, hostPath: file } };
}
