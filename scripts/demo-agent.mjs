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
import { IMPLEMENT_REVIEW } from '../dist/test/fixtures/implement-review.js';
import { ModelServer } from '../dist/test/fixtures/model-server.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const say = (m) => process.stderr.write(`demo-agent: ${m}\n`);

// One sequence of answers for the whole run: the reviewer asks for changes twice, then approves (a bounded review loop).
const server = await ModelServer.start(IMPLEMENT_REVIEW);

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
