import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findGvisorRuntime, gvisorCaveats, gvisorPidLimits, noGvisorMessage, probeFailureMessage, sandboxRoot, sandboxTasks } from '../../src/container/gvisor.js';

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
  assert.equal(findGvisorRuntime({ 'runsc-kvm': { path: '/usr/local/bin/runsc-kvm' } }, 'runsc-kvm'), 'runsc-kvm');
  // a name given that is there but is not gVisor is refused, not run under whatever it is
  assert.equal(findGvisorRuntime(runtimes, 'runc'), undefined);
  assert.equal(findGvisorRuntime({ shim: { runtimeType: 'io.containerd.runsc.v1' } }, 'shim'), 'shim');
  assert.equal(findGvisorRuntime({ kata: { runtimeType: 'io.containerd.kata.v2' } }), undefined);
});

test('a runtime named that is not gVisor: the message says what it runs and how to use the engine\'s runsc', () => {
  const m = noGvisorMessage(['x'], 'e', 'runc', { path: 'runc' });
  assert.match(m, /the runtime runc \(RUNNER_GVISOR_RUNTIME\) .* is not gVisor: it runs runc, not runsc \(unset RUNNER_GVISOR_RUNTIME/);
  assert.match(m, /Nothing was started/);
});

test('the sandbox\'s task count: runsc\'s state directory from the sandbox\'s command line, the count from its stats', () => {
  assert.equal(sandboxRoot(['runsc-sandbox', '--root=/var/run/docker/runtime-runc/moby', '--log=/x', 'boot', '--root=/evil']), '/var/run/docker/runtime-runc/moby');
  assert.equal(sandboxRoot(['runsc', '--root', '/run/r', 'boot']), '/run/r');
  assert.equal(sandboxRoot(['runsc-sandbox', '--root=relative', 'boot']), undefined);
  assert.equal(sandboxRoot(['runsc-sandbox', '--root=/run/../etc', 'boot']), undefined);
  assert.equal(sandboxRoot(['runsc-sandbox', 'boot', '--root=/after/boot']), undefined);
  assert.equal(sandboxTasks('{"type":"stats","id":"x","data":{"cpu":{},"pids":{"current":20}}}'), 20);
  assert.equal(sandboxTasks('{"type":"stats","data":{}}'), undefined);
  assert.equal(sandboxTasks('{"data":{"pids":{"current":"20"}}}'), undefined);
  assert.equal(sandboxTasks('not json'), undefined);
});

test('no gVisor: the message names the steps and says how to add it and how to do without', () => {
  const m = noGvisorMessage(['build', 'test'], 'unix:///var/run/docker.sock');
  assert.match(m, /^steps build, test ask for isolation: gvisor/);
  assert.match(m, /apt-get install runsc/);
  assert.match(m, /\/etc\/docker\/daemon\.json/);
  assert.match(m, /kill -HUP/);
  assert.match(m, /isolation: runc/);
  assert.match(noGvisorMessage(['x'], 'e', 'mine'), /has no runtime called mine \(RUNNER_GVISOR_RUNTIME\)/);
});

test('a runsc whose netstack refuses every container is explained with the fix', () => {
  const m = probeFailureMessage('runsc', 'OCI runtime start failed: starting container: setting up network: creating interfaces from net namespace "/proc/7/ns/net": cannot run with network enabled in root network namespace: unknown');
  assert.match(m, /--network=host/);
  assert.match(m, /rmem_default/);
  assert.match(probeFailureMessage('runsc', 'boom\nsecond line'), /could not start a container.*: boom\. Try it by hand: docker run --rm --runtime=runsc/);
});

test('under gVisor the process cap is RLIMIT_NPROC, with a cgroup backstop the sandbox\'s own threads fit in', () => {
  assert.deepEqual(gvisorPidLimits(512), { nproc: 512, cgroupPids: 512 * 16 + 512 });
  // measured: 61 processes in a sandbox were 537 host threads (ptrace platform)
  assert.ok(gvisorPidLimits(61).cgroupPids > 537);
  // and 64 processes at their cap pushed the host cgroup to about 1,000
  assert.ok(gvisorPidLimits(64).cgroupPids > 1100);
});

test('validate says what gVisor drops of what a step asks: NET_RAW', () => {
  assert.deepEqual(gvisorCaveats([{ id: 'a', capAdd: ['NET_BIND_SERVICE'] }]), []);
  const [w] = gvisorCaveats([{ id: 'a', capAdd: ['CAP_NET_RAW'] }, { id: 'b', capAdd: ['NET_RAW'] }]);
  assert.match(w!, /^steps a, b ask for cap_add NET_RAW under isolation: gvisor.*--net-raw/);
});
