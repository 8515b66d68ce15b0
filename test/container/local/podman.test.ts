/** What Podman's Docker-compatible API needs said differently: its socket, knowing it, refusing a rootless one that cannot cap a step, its process limit. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostProcessLimit, isolatedNetworkOptions, podmanNetworkBody, podmanOverlayBind, isolationRuleProblem, isPodmanVersion, podmanHint, podmanHost, podmanOomUnreported, podmanRefusal, podmanSocket, PODMAN_ROOT_SOCKET } from '../../../src/container/local/podman.js';

test('podman socket: DOCKER_HOST (or CONTAINER_HOST) when set, else root\'s, else the user\'s runtime directory', () => {
  assert.equal(podmanSocket({ DOCKER_HOST: 'unix:///tmp/p.sock' }, 0), 'unix:///tmp/p.sock');
  assert.equal(podmanSocket({ CONTAINER_HOST: 'unix:///tmp/c.sock', DOCKER_HOST: 'unix:///tmp/d.sock' }, 0), 'unix:///tmp/c.sock');
  assert.equal(podmanSocket({}, 0), PODMAN_ROOT_SOCKET);
  assert.equal(podmanSocket({ XDG_RUNTIME_DIR: '/run/user/1000' }, 1000), 'unix:///run/user/1000/podman/podman.sock');
  assert.equal(podmanSocket({}, 1001), 'unix:///run/user/1001/podman/podman.sock');
});

test('podman is known by its /version components; Docker is not taken for it', () => {
  assert.equal(isPodmanVersion({ Components: [{ Name: 'Podman Engine' }, { Name: 'Conmon' }] }), true);
  assert.equal(isPodmanVersion({ Components: [{ Name: 'Engine' }, { Name: 'containerd' }] }), false);
  assert.equal(isPodmanVersion({ Components: null }), false);
  assert.equal(isPodmanVersion(undefined), false);
});

const info = (rootless: boolean, cgroupVersion: string, cgroupControllers?: string[]) => podmanHost({ host: { security: { rootless }, cgroupVersion, ...(cgroupControllers ? { cgroupControllers } : {}) } });

test('root podman is never refused, on cgroup v1 or v2', () => {
  assert.equal(podmanRefusal(info(false, 'v1'), 'unix:///run/podman/podman.sock'), undefined);
  assert.equal(podmanRefusal(info(false, 'v2', ['cpu']), 'unix:///run/podman/podman.sock'), undefined);
});

test('rootless podman on cgroup v1 is refused: it cannot cap memory or processes, and says which host would do', () => {
  const why = podmanRefusal(info(true, 'v1'), 'unix:///run/user/1000/podman/podman.sock');
  assert.ok(why);
  assert.match(why, /unix:\/\/\/run\/user\/1000\/podman\/podman\.sock is rootless on a cgroup v1 host/);
  assert.match(why, /cannot enforce a step's memory or process limits/);
  assert.match(why, /will not run steps uncapped/);
  assert.match(why, /cgroup v2/);
  assert.match(why, /delegates the memory, pids and cpu controllers/);
  assert.match(why, /as root/);
});

test('rootless podman on cgroup v2: refused without the memory or pids controller delegated, run with both', () => {
  const noPids = podmanRefusal(info(true, 'v2', ['cpu', 'memory']), 'sock');
  assert.ok(noPids);
  assert.match(noPids, /no pids controller delegated/);
  assert.match(noPids, /process limit/);
  const neither = podmanRefusal(info(true, 'v2', ['cpu']), 'sock');
  assert.match(neither ?? '', /no memory or pids controller/);
  assert.equal(podmanRefusal(info(true, 'v2', ['cpu', 'memory', 'pids']), 'sock'), undefined);
});

test('an answer without the fields is read as root on an unknown cgroup: never refused for what it did not say', () => {
  assert.deepEqual(podmanHost({}), { rootless: false, cgroupVersion: 'unknown' });
  // rootless without a cgroup version it names: refused, as v1 would be
  assert.match(podmanRefusal(podmanHost({ host: { security: { rootless: true } } }), 'sock') ?? '', /rootless on a cgroup unknown host/);
});

const limits = (hard: string) => `Limit                     Soft Limit           Hard Limit           Units     \nMax cpu time              unlimited            unlimited            seconds   \nMax processes             ${hard}                ${hard}                processes \nMax open files            20000                20000                files     \n`;

test('the process limit a podman container gets: the host\'s hard limit, at most pid_max', () => {
  assert.equal(hostProcessLimit(limits('96364'), '32768\n'), 32768);
  assert.equal(hostProcessLimit(limits('4096'), '4194304\n'), 4096);
  assert.equal(hostProcessLimit(limits('unlimited'), '4194304\n'), 4194304);
  // nothing readable: none given, Podman's own default stands
  assert.equal(hostProcessLimit('', ''), undefined);
  assert.equal(hostProcessLimit(limits('unlimited'), ''), undefined);
});

test('a missing catatonit is explained with how to install it; other errors get no hint', () => {
  assert.match(podmanHint('container create: container-init binary not found on the host: stat /usr/libexec/podman/catatonit: no such file or directory') ?? '', /apt-get install catatonit/);
  assert.equal(podmanHint('no such image'), undefined);
});

test("an isolated network: Docker leaves the host's address off; on Podman its bridge is named rnri… for the host's rule", () => {
  assert.deepEqual(isolatedNetworkOptions(false), { 'com.docker.network.bridge.inhibit_ipv4': 'true' });
  assert.deepEqual(isolatedNetworkOptions(true, '0a1b2c3d4e'), { 'com.docker.network.bridge.name': 'rnri0a1b2c3d4e' });
  // a Linux interface name has at most 15 characters
  assert.ok(isolatedNetworkOptions(true)['com.docker.network.bridge.name']!.length <= 15);
  assert.notEqual(isolatedNetworkOptions(true)['com.docker.network.bridge.name'], isolatedNetworkOptions(true)['com.docker.network.bridge.name']);
});

test("the host's rule for isolated networks: there, missing, or not to be asked", () => {
  assert.equal(isolationRuleProblem(0, ''), undefined);
  const missing = isolationRuleProblem(1, 'iptables: Bad rule (does a matching rule exist in that chain?).');
  assert.match(missing ?? '', /the host has no such rule: run scripts\/ensure-podman\.sh as root, or add the rule yourself: iptables -I INPUT -i rnri\+ -j DROP/);
  assert.match(missing ?? '', /a step would reach every service this machine listens on/);
  assert.match(isolationRuleProblem('ENOENT', '') ?? '', /could not ask iptables whether it has it \(no iptables here\)/);
  assert.match(isolationRuleProblem(4, 'iptables v1.8.9 (nf_tables): Could not fetch rule set generation id: Permission denied (you must be root)\n') ?? '', /\(4: iptables v1\.8\.9 \(nf_tables\): Could not fetch rule set generation id: Permission denied \(you must be root\)\)/);
});

test('an overlay mount on Podman: a bind with O, its upper and work directories', () => {
  assert.equal(
    podmanOverlayBind({ source: '/home/r/cache/npm/data', target: '/var/cache/runner/npm', overlay: { upper: '/home/r/l/upper', work: '/home/r/l/work' } }),
    '/home/r/cache/npm/data:/var/cache/runner/npm:O,upperdir=/home/r/l/upper,workdir=/home/r/l/work',
  );
  assert.throws(() => podmanOverlayBind({ source: '/a,b', target: '/t', overlay: { upper: '/u', work: '/w' } }), /cannot hold ':' or ','/);
});

test("a network on Podman: its own API, no name server of Podman's, an isolated one's bridge named for the host's rule", () => {
  const labels = { 'dev.runner.run-id': 'r1' };
  assert.deepEqual(podmanNetworkBody({ name: 'n-net', internal: true, isolated: true, labels }, '0a1b2c3d4e'), { name: 'n-net', driver: 'bridge', internal: true, labels, dns_enabled: false, network_interface: 'rnri0a1b2c3d4e' });
  assert.deepEqual(podmanNetworkBody({ name: 'e', internal: false, isolated: false, labels }), { name: 'e', driver: 'bridge', internal: false, labels, dns_enabled: false });
});

test('podman on cgroup v1 never reports a kill at the memory cap; on v2 it does', () => {
  assert.equal(podmanOomUnreported(podmanHost({ host: { cgroupVersion: 'v1' } })), true);
  assert.equal(podmanOomUnreported(podmanHost({ host: { cgroupVersion: 'v2' } })), false);
  assert.equal(podmanOomUnreported(podmanHost({})), true, 'unknown: taken as not reported');
});
