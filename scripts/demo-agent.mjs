#!/usr/bin/env node
// make demo-agent: a REHEARSAL of pipelines/implement-review.yaml. The agents
// are the real Claude Code CLI in runner/claude-code, run by the runner as in a
// real run; only the model is scripted (test/fixtures/model-server.ts), so no
// key is needed and the answers are always the same. The pipeline file is used
// as it is, with base_url added to its agents to reach the scripted model.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ModelServer } from '../dist/test/fixtures/model-server.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ws = '/home/agent/run-workspace';
const say = (m) => process.stderr.write(`demo-agent: ${m}\n`);

// One sequence of answers for the whole run: the reviewer asks for changes twice, then approves (a bounded review loop).
const verdict = (v) => ({ tool: { name: 'Bash', input: { command: `echo verdict=${v} >> "$RUNNER_OUTPUT"`, description: 'record the verdict' } } });
const review = (text) => ({ tool: { name: 'Write', input: { file_path: `${ws}/REVIEW.md`, content: `# Review\n\n${text}\n` } } });
const server = await ModelServer.start({
  turns: [
    // implement (the coder)
    { text: 'I will add greet.js as TASK.md asks.', tool: { name: 'Write', input: { file_path: `${ws}/greet.js`, content: "exports.greet = () => 'hello, world';\n" } } },
    { tool: { name: 'Bash', input: { command: 'npm test', description: 'run the tests' } } },
    { text: 'Added greet() in greet.js; npm test passes.' },
    // review (the reviewer): changes requested
    { tool: { name: 'Bash', input: { command: 'git diff "$RUNNER_BASE_SHA" --stat', description: 'see the change' } } },
    review('greet() ignores its name: greet("ada") says "hello, world".\n\nCHANGES_REQUESTED'),
    verdict('CHANGES_REQUESTED'),
    { text: 'Reviewed greet.js: CHANGES_REQUESTED (greet ignores its name)' },
    // implement#2
    { tool: { name: 'Write', input: { file_path: `${ws}/greet.js`, content: 'exports.greet = (name) => `hello, ${name}`;\n' } } },
    { text: 'greet(name) now uses the name.' },
    // review#2: changes requested
    review('greet(name) works, but nothing tests another name than "world".\n\nCHANGES_REQUESTED'),
    verdict('CHANGES_REQUESTED'),
    { text: 'Reviewed greet.js: CHANGES_REQUESTED (test another name)' },
    // implement#3
    { tool: { name: 'Bash', input: { command: "echo \"assert.strictEqual(greet('ada'), 'hello, ada');\" >> test.js && npm test", description: 'test another name' } } },
    { text: 'Tested greet with another name; npm test passes.' },
    // review#3: approved
    review('greet.js does what TASK.md asks and the tests cover it.\n\nAPPROVED'),
    verdict('APPROVED'),
    { text: 'Reviewed greet.js: APPROVED' },
  ],
  usage: { input: 2400, output: 60 },
});

const original = await readFile(path.join(root, 'pipelines/implement-review.yaml'), 'utf8');
const rehearsal = original
  .replace('path: ../.demo/agent-project', 'path: agent-project')
  .replace(/^( +)use: claude-code.*$/gm, (line, indent) => `${line}\n${indent}base_url: ${server.url}   # the scripted model (rehearsal only)`);
const file = path.join(root, '.demo/implement-review.rehearsal.yaml');
await writeFile(file, `# REHEARSAL copy of pipelines/implement-review.yaml, made by make demo-agent: its agents talk to a scripted model.\n${rehearsal}`);

say('REHEARSAL: the real Claude Code CLI in its container, against a SCRIPTED model (no API key, no model API).');
say(`running ${path.relative(root, file)} (pipelines/implement-review.yaml with base_url added)`);
const child = spawn(process.execPath, [path.join(root, 'dist/runner/main.js'), 'exec', file, '--home', path.join(root, '.demo/home')], {
  stdio: 'inherit',
  env: { ...process.env, ANTHROPIC_API_KEY: 'sk-ant-rehearsal-not-a-real-key' },
});
const code = await new Promise((r) => child.on('close', r));
await server.close();
say(`the scripted model answered ${server.agentRequests().length} requests from the agents`);
process.exit(code ?? 1);
