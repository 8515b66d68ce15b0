/** Whether the engine sees a path where a runner in a container sees it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostPathProblem, ownContainerId } from '../../src/container/host-paths.js';

const ID = 'a'.repeat(12) + '0123456789abcdef'.repeat(3) + 'b'.repeat(4);

test('finds its own container id in mountinfo, and none on a host', () => {
  const inContainer = [
    '612 590 0:52 / / rw,relatime master:322 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X',
    `630 612 8:1 /var/lib/docker/containers/${ID}/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/sda1 rw`,
    `631 612 8:1 /var/lib/docker/containers/${ID}/hostname /etc/hostname rw,relatime - ext4 /dev/sda1 rw`,
  ].join('\n');
  assert.equal(ownContainerId(inContainer), ID);
  assert.equal(ownContainerId('22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n'), undefined);
});

const mounts = [
  { type: 'bind', source: '/var/lib/runner', destination: '/var/lib/runner' },
  { type: 'bind', source: '/home/me/projects', destination: '/projects' },
  { type: 'volume', source: '/var/lib/docker/volumes/data/_data', destination: '/data' },
  { type: 'bind', source: '/run/docker.sock', destination: '/var/run/docker.sock' },
];

test('a path under a mount at the identical path is fine', () => {
  assert.equal(hostPathProblem('/var/lib/runner', mounts), undefined);
  assert.equal(hostPathProblem('/var/lib/runner/worktrees/r1', mounts), undefined);
});

test('a path only in the container, a bind from elsewhere, or a named volume, is a problem that says what to do', () => {
  assert.match(hostPathProblem('/srv/project', mounts)!, /exists only inside the runner's container.*identical path/);
  assert.match(hostPathProblem('/projects/site', mounts)!, /at \/projects from the host's \/home\/me\/projects.*identical path \("- \/home\/me\/projects:\/home\/me\/projects"/);
  assert.match(hostPathProblem('/data/worktrees', mounts)!, /from a volume \(\/var\/lib\/docker\/volumes\/data\/_data on the host\)/);
  assert.match(hostPathProblem('/var/lib/runnerx', mounts)!, /exists only inside/, 'a name that merely starts like a mount is not under it');
});
