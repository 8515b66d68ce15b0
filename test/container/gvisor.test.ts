import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findGvisorRuntime, gvisorPidLimits, noGvisorMessage, probeFailureMessage } from '../../src/container/gvisor.js';

test('the gVisor runtime is the one named, else runsc, else any whose program is runsc', () => {
  const runtimes = { runc: { path: 'runc' }, 'gvisor-kvm': { path: '/usr/local/bin/runsc' }, runsc: { path: '/usr/bin/runsc' } };
  assert.equal(findGvisorRuntime(runtimes), 'runsc');
  assert.equal(findGvisorRuntime({ runc: { path: 'runc' }, sandboxed: { path: '/opt/gvisor/runsc' } }), 'sandboxed');
  assert.equal(findGvisorRuntime(runtimes, 'gvisor-kvm'), 'gvisor-kvm');
  // a name that is not there is not replaced by another: the user asked for that one
  assert.equal(findGvisorRuntime(runtimes, 'missing'), undefined);
  assert.equal(findGvisorRuntime({ runc: { path: 'runc' }, crun: { path: '/usr/bin/crun' } }), undefined);
  // a runtime called runsc that is some other program is not gVisor
  assert.equal(findGvisorRuntime({ runsc: { path: '/usr/bin/runc' } }), undefined);
  assert.equal(findGvisorRuntime({ fake: { path: '/usr/bin/not-runsc' } }), undefined);
  // RUNNER_GVISOR_RUNTIME cannot make runc pass for gVisor
  assert.equal(findGvisorRuntime({ runc: { path: 'runc' }, runsc: { path: '/usr/bin/runsc' } }, 'runc'), undefined);
  assert.equal(findGvisorRuntime({ 'runsc-kvm': { path: '/usr/local/bin/runsc-kvm' } }, 'runsc-kvm'), 'runsc-kvm');
});

test('no gVisor: the message names the steps and says how to add it and how to do without', () => {
  const m = noGvisorMessage(['build', 'test'], 'unix:///var/run/docker.sock');
  assert.match(m, /^steps build, test ask for isolation: gvisor/);
  assert.match(m, /apt-get install runsc/);
  assert.match(m, /\/etc\/docker\/daemon\.json/);
  assert.match(m, /kill -HUP/);
  assert.match(m, /isolation: runc/);
  assert.match(noGvisorMessage(['x'], 'e', 'mine'), /no gVisor runtime called mine \(RUNNER_GVISOR_RUNTIME/);
});

test('a runsc whose netstack refuses every container is explained with the fix', () => {
  const m = probeFailureMessage('runsc', 'OCI runtime start failed: starting container: setting up network: creating interfaces from net namespace "/proc/7/ns/net": cannot run with network enabled in root network namespace: unknown');
  assert.match(m, /--network=host/);
  assert.match(m, /rmem_default/);
  assert.match(probeFailureMessage('runsc', 'boom\nsecond line'), /could not start a container.*: boom\. Try it by hand: docker run --rm --runtime=runsc/);
});

test('under gVisor the process cap is RLIMIT_NPROC, with a cgroup backstop the sandbox\'s own threads fit in', () => {
  assert.deepEqual(gvisorPidLimits(512), { nproc: 512, cgroupPids: 512 * 12 + 256 });
  // measured: 61 processes in a sandbox were 537 host threads (ptrace platform)
  assert.ok(gvisorPidLimits(61).cgroupPids > 537);
});
