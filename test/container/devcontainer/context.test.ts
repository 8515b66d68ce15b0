import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import tar from 'tar-stream';
import { hashEntries, insideProject, listContext, matchesSources, packContext, readProjectFile } from '../../../src/container/devcontainer/context.js';
import { findDevcontainer } from '../../../src/container/devcontainer/prepare.js';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function project(): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), 'runner-dc-ctx-'));
  dirs.push(d);
  await mkdir(path.join(d, '.devcontainer'));
  return d;
}

describe('the project files a dev container reads, read as hostile', () => {
  it('never follows a devcontainer.json or Dockerfile that is a symbolic link (a host file would enter the image)', async () => {
    const p = await project();
    await symlink('/etc/passwd', path.join(p, '.devcontainer/devcontainer.json'));
    await assert.rejects(findDevcontainer(p), /symbolic link, which is never followed/);
    await symlink('/etc/passwd', path.join(p, 'Dockerfile'));
    await assert.rejects(readProjectFile(path.join(p, 'Dockerfile'), 'the Dockerfile'), /symbolic link/);
  });

  it('refuses a path outside the project, and one reached through a linked directory', async () => {
    const p = await project();
    await assert.rejects(insideProject(p, '../..', 'the build context'), /outside the project/);
    await symlink('/etc', path.join(p, '.devcontainer/etc'));
    await assert.rejects(insideProject(p, '.devcontainer/etc/passwd', 'the Dockerfile'), /symbolic link that leaves the project/);
    // a build context (or a feature's folder) that is itself a link: its files would be the host's
    await assert.rejects(insideProject(p, '.devcontainer/etc', 'the build context'), /the build context \.devcontainer\/etc is a symbolic link, which is never followed/);
  });

  it('takes the project itself as a build context (".." from .devcontainer, as real projects write it)', async () => {
    const p = await project();
    assert.equal(await insideProject(p, path.join('.devcontainer', '..'), 'the build context'), await realpath(p));
    assert.equal(await insideProject(p, '.devcontainer', 'the build context'), path.join(await realpath(p), '.devcontainer'));
  });

  it('lists a context without .git and what .dockerignore leaves out, its links as links', async () => {
    const p = await project();
    await mkdir(path.join(p, '.git'));
    await writeFile(path.join(p, '.git/config'), 'x');
    await mkdir(path.join(p, 'node_modules/x'), { recursive: true });
    await writeFile(path.join(p, 'node_modules/x/i.js'), 'x');
    await writeFile(path.join(p, 'keep.txt'), 'k');
    await writeFile(path.join(p, 'secret.env'), 's');
    await writeFile(path.join(p, '.dockerignore'), 'node_modules\n*.env\n');
    await symlink('/etc/shadow', path.join(p, 'link'));
    const entries = await listContext(p);
    assert.deepEqual(entries.map((e) => e.rel).sort(), ['.devcontainer', '.dockerignore', 'keep.txt', 'link']);
    assert.deepEqual(entries.find((e) => e.rel === 'link'), { rel: 'link', kind: 'symlink', mode: entries.find((e) => e.rel === 'link')!.mode, size: 0, link: '/etc/shadow' });

    // the tar holds the link as a link, never what it points at
    const got: Array<{ name: string; type: string; linkname?: string | null }> = [];
    await new Promise<void>((resolve, reject) => {
      const x = tar.extract();
      x.on('entry', (h, stream, next) => {
        got.push({ name: h.name, type: h.type ?? 'file', linkname: h.linkname ?? null });
        stream.resume();
        stream.on('end', next);
      });
      x.on('finish', resolve);
      x.on('error', reject);
      packContext(p, entries, [{ name: 'Extra.Dockerfile', content: 'FROM x\n' }]).pipe(x);
    });
    assert.deepEqual(got.find((e) => e.name === 'link'), { name: 'link', type: 'symlink', linkname: '/etc/shadow' });
    assert.ok(got.some((e) => e.name === 'Extra.Dockerfile'));
  });

  it("hashes the files a Dockerfile copies: a link's text, not its target", async () => {
    const p = await project();
    await writeFile(path.join(p, 'tool'), 'v1');
    await symlink('/etc/hostname', path.join(p, 'l'));
    const hash = async () => {
      const h = createHash('sha256');
      await hashEntries(h, p, (await listContext(p)).filter((e) => matchesSources(e.rel, ['tool', 'l'])));
      return h.digest('hex');
    };
    const one = await hash();
    await writeFile(path.join(p, 'unrelated'), 'x');
    assert.equal(await hash(), one);
    await writeFile(path.join(p, 'tool'), 'v2');
    assert.notEqual(await hash(), one);
    assert.equal(matchesSources('src/a/b.ts', ['src']), true);
    assert.equal(matchesSources('srcx/a', ['src']), false);
    assert.equal(matchesSources('a/b.sh', ['a/*.sh']), true);
  });
});
