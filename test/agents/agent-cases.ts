/**
 * What every agent preset is tested for, with its real CLI against the
 * scripted model: it edits a project (owned by a user, and by root: the step
 * then runs as 65532), it asks again after an overloaded answer, and a model
 * that never finishes ends in a timeout with the agent's work committed. Its
 * log holds nothing a user cannot act on: no CLI waiting on its stdin, no call
 * home (telemetry, update checks, model lists) refused by its gateway.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer, type Script } from '../fixtures/model-server.js';
import { commitsOn, execPipeline, git, projectsForThisFile, runCli, writePipeline, type CliResult, type Fixture } from '../fixtures/project.js';

export interface AgentCase {
  preset: string;
  /** the pipeline for a server, with an optional step timeout */
  pipeline: (server: ModelServer, timeout?: string) => string;
  /** a script whose turns write hello.txt, write ran.txt, then say "Wrote hello.txt and ran.txt." */
  edits: Script;
  env: NodeJS.ProcessEnv;
  /** what else a CLI's edit run must show (its usage, its request) */
  check: (r: CliResult, server: ModelServer, f: Fixture) => Promise<void> | void;
}

/** The step's log says nothing a user cannot act on: each line the CLI's work, or something to fix. */
async function assertQuiet(f: Fixture, runId: string): Promise<void> {
  const log = await readFile(path.join(f.home, 'runs', runId, 'steps', 'implement.log'), 'utf8');
  assert.doesNotMatch(log, /Reading (additional input|prompt) from stdin/, `the CLI waited on no stdin:\n${log}`);
  assert.deepEqual(log.split('\n').filter((l) => /^runner gateway: refused /.test(l)), [], `the CLI called no host but its model (telemetry, updates, model lists are off):\n${log}`);
  const events = (await readFile(path.join(f.home, 'runs', runId, 'events.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { message: string; host?: string });
  assert.deepEqual(events.filter((e) => e.message === 'egress_refused').map((e) => e.host), [], 'no egress refusal in the run\'s events');
}

export function agentCases(c: AgentCase): void {
  const fixture = projectsForThisFile();
  const servers: ModelServer[] = [];
  after(() => Promise.all(servers.map((s) => s.close())));
  const model = async (script: Script) => {
    const s = await ModelServer.start(script);
    servers.push(s);
    return s;
  };
  const run = async (f: Fixture, script: Script, timeout?: string) => {
    const server = await model(script);
    const r = await execPipeline(f, await writePipeline(f, c.pipeline(server, timeout)), [], { env: c.env });
    return { r, server };
  };

  for (const owner of [1000, undefined]) {
    test(`${c.preset} edits a ${owner ? 'project owned by a user' : 'root-owned project (the step runs as 65532)'}: committed, its result the subject, usage recorded, its log quiet`, { timeout: 600_000 }, async () => {
      const f = await fixture(owner ? { owner } : {});
      const { r, server } = await run(f, c.edits);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.json.steps.implement.status, 'completed');
      assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent');
      assert.equal(git(f.project, 'show', `${r.json.branch}:ran.txt`), 'ran');
      assert.equal(commitsOn(f.project, r.json.branch, r.json.baseSha)[0]!.subject, 'step/implement (coder): Wrote hello.txt and ran.txt.');
      await c.check(r, server, f);
      await assertQuiet(f, r.json.runId);
    });
  }

  test(`${c.preset}: a model that answers overloaded first is asked again; the step completes`, { timeout: 600_000 }, async () => {
    const f = await fixture({ owner: 1000 });
    const { r, server } = await run(f, { ...c.edits, overloaded: 1 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.steps.implement.status, 'completed');
    assert.deepEqual(server.agentRequests().map((q) => q.answer).slice(0, 2), ['overloaded', 'turn'], 'what the CLI did: it asked again');
    assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent');
  });

  test(`${c.preset}: a model that never finishes: the step times out and what the agent wrote is committed; its log showed the tool call live`, { timeout: 600_000 }, async () => {
    const f = await fixture({ owner: 1000 });
    const server = await model({ ...c.edits, hangAfter: 1 });
    let done = false;
    // the timeout must come after the agent's first tool call: its CLI's start alone took over 20 s on a busy machine
    const running = execPipeline(f, await writePipeline(f, c.pipeline(server, '60s')), [], { env: c.env }).finally(() => (done = true));
    // while the agent waits on its model, its log already says what it did
    let seenLive: string | undefined;
    while (!done && !seenLive) {
      for (const run of await readdir(path.join(f.home, 'runs')).catch(() => [] as string[])) {
        const log = await readFile(path.join(f.home, 'runs', run, 'steps', 'implement.log'), 'utf8').catch(() => '');
        seenLive = log.split('\n').find((l) => new RegExp(`^${c.preset}: .*hello\\.txt`).test(l));
      }
      await new Promise((res) => setTimeout(res, 200));
    }
    const r = await running;
    assert.ok(seenLive, `the step's log named hello.txt while the step ran: ${await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.log'), 'utf8').catch(() => '')}`);
    const transcript = await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.transcript.jsonl'), 'utf8');
    assert.ok(transcript.split('\n').filter(Boolean).every((l) => JSON.parse(l)), 'the transcript holds the events as the CLI wrote them');
    const printed = await runCli(['logs', r.json.runId, '--step', 'implement', '--transcript', '--home', f.home]);
    assert.equal(printed.code, 0, printed.stderr);
    assert.equal(printed.stdout, transcript, 'runner logs --transcript prints them as they are');
    const json = await runCli(['logs', r.json.runId, '--step', 'implement', '--transcript', '--json', '--home', f.home]);
    assert.equal(json.code, 0, json.stderr);
    const events = json.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { agent: string; kind: string; input?: unknown });
    assert.ok(events.length && events.every((e) => e.agent === c.preset), `--transcript --json: the events in one shape, of ${c.preset}`);
    assert.ok(events.some((e) => e.kind === 'tool_call' && JSON.stringify(e.input).includes('hello.txt')), `its tool call, in the one shape: ${json.stdout.slice(0, 3000)}`);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.json.steps.implement.status, 'timed_out');
    assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent', 'the work before the hang is kept');
    assert.equal(server.agentRequests().at(-1)!.answer, 'hung');
  });
}
