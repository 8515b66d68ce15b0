/** What a step's container is given, and what it is not: checked from inside a real container. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execPipeline, git, ISOLATION, pipelineYaml, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('no capabilities, no new privileges, not root, capped files, no docker socket, no network', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: inspect
    run: |
      {
        echo "uid=$(id -u)"
        grep -E '^(CapEff|CapPrm|CapBnd)' /proc/self/status
        setpriv --dump 2>/dev/null | grep '^no_new_privs:' || echo "no_new_privs: unknown"
        dmesg 2>/dev/null | grep -q gVisor && echo "kernel=gVisor" || echo "kernel=$(uname -r)"
        echo "nofile=$(ulimit -n)"
        echo "fsize=$(ulimit -f)"
        test -e /var/run/docker.sock && echo "docker.sock=present" || echo "docker.sock=absent"
        echo "interfaces-besides-lo=$(grep -cv -E 'lo:|Inter|face' /proc/net/dev || true)"
        awk '$2 ~ /^\\/home\\/agent/ {print "mount " $2 " " substr($4,1,2)}' /proc/mounts | sort
      } > inspect.txt
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const seen = git(f.project, 'show', `${r.json.branch}:inspect.txt`);
  assert.match(seen, /^uid=65532$/m, 'a root-owned project gets a non-root step');
  assert.match(seen, /^CapEff:\s+0{16}$/m);
  assert.match(seen, /^CapPrm:\s+0{16}$/m);
  assert.match(seen, /^CapBnd:\s+0{16}$/m);
  // The flag itself, as prctl(PR_GET_NO_NEW_PRIVS) reads it: gVisor's
  // /proc/self/status has no NoNewPrivs line, setpriv asks the kernel either way.
  assert.match(seen, /^no_new_privs: 1$/m);
  // The step ran in the sandbox this process asked for (gVisor's kernel says so in dmesg).
  if (ISOLATION === 'gvisor') assert.match(seen, /^kernel=gVisor$/m);
  else assert.doesNotMatch(seen, /^kernel=gVisor$/m);
  assert.match(seen, /^nofile=4096$/m);
  assert.match(seen, /^fsize=2097152$/m, '1g in 512-byte blocks');
  assert.match(seen, /^docker\.sock=absent$/m);
  assert.match(seen, /^interfaces-besides-lo=0$/m);
  assert.deepEqual(
    seen.split('\n').filter((l) => l.startsWith('mount ')),
    ['mount /home/agent/.runner rw', 'mount /home/agent/project-workspace ro', 'mount /home/agent/run-workspace rw'],
  );
});

test('read_only: the root filesystem cannot be written, /tmp and the workspace can', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: ro
    read_only: true
    run: |
      if touch /etc/evil 2>/dev/null; then echo "etc=written"; else echo "etc=refused"; fi
      touch /tmp/scratch && echo "tmp=ok"
      echo ok > result.txt
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /\[ro\] etc=refused/);
  assert.match(r.stderr, /\[ro\] tmp=ok/);
  assert.equal(git(f.project, 'show', `${r.json.branch}:result.txt`), 'ok');
});

test('network: bridge is given only when asked, and cap_add adds back a named capability', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: net
    network: bridge
    cap_add: [NET_BIND_SERVICE]
    run: |
      echo "interfaces-besides-lo=$(grep -cv -E 'lo:|Inter|face' /proc/net/dev || true)"
      grep CapBnd /proc/self/status
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /\[net\] interfaces-besides-lo=1/);
  assert.match(r.stderr, /\[net\] CapBnd:\s+0000000000000400/, 'only CAP_NET_BIND_SERVICE (bit 10) is in the bounding set');
});
