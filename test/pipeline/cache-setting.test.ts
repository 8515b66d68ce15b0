import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PipelineError, formatPipelineIssue } from '../../src/common/errors.js';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { cachePathProblem } from '../../src/pipeline/cache-setting.js';

const file = (cache: string, level: 'defaults' | 'step' = 'step') => `version: 1
name: p
defaults: { image: base${level === 'defaults' ? `, cache: ${cache}` : ''} }
steps:
  - id: s
    run: "true"
${level === 'step' ? `    cache: ${cache}\n` : ''}`;

function problems(text: string): string[] {
  try {
    parsePipeline(text, 'x.yaml');
    return [];
  } catch (err) {
    assert.ok(err instanceof PipelineError, String(err));
    return err.issues.map((i) => formatPipelineIssue('x.yaml', i));
  }
}

test('the forms a cache: setting takes', () => {
  const cases: Array<[string, unknown]> = [
    ['[npm, pip]', { npm: { readOnly: false }, pip: { readOnly: false } }],
    ['{ npm: ro }', { npm: { readOnly: true } }],
    // rw said outright: the file trusts the step to write, even after an agent step (src/cache/write-trust.ts)
    ['{ npm: rw, yarn: true }', { npm: { readOnly: false, writeAlways: true }, yarn: { readOnly: false } }],
    ['{ npm: { read_only: false } }', { npm: { readOnly: false, writeAlways: true } }],
    ['{ npm: { max: 1g } }', { npm: { readOnly: false, max: 1024 ** 3 } }],
    ['{ npm: { read_only: true, max: 512m } }', { npm: { readOnly: true, max: 512 * 1024 ** 2 } }],
    ['{ maven: { path: /home/agent/.m2/repository/ } }', { maven: { readOnly: false, path: '/home/agent/.m2/repository' } }],
    ['[]', {}],
  ];
  for (const [text, want] of cases) {
    const p = parsePipeline(file(text), 'x.yaml');
    assert.deepEqual(p.steps[0]!.cache, want, text);
    assert.deepEqual(parsePipeline(file(text, 'defaults'), 'x.yaml').defaults?.cache, want, `defaults: ${text}`);
  }
});

test('a cache: setting that cannot be used says why, at its place', () => {
  const cases: Array<[string, RegExp]> = [
    ['npm', /expected a list of caches like \[npm\] or a map like \{ npm: ro \}/],
    ['[Npm]', /expected a cache name of lowercase letters/],
    ['[npm, npm]', /cache npm is named twice/],
    ['[maven]', /does not know where maven keeps its cache: give it a path:/],
    ['{ npm: rx }', /expected rw, ro or \{ path:, max:, read_only: \}/],
    ['{ npm: { max: lots } }', /expected a size like 512m or 2g/],
    ['{ npm: { size: 1g } }', /unknown key "size": a cache takes path:, max: and read_only:/],
    ['{ npm: { read_only: yes } }', /expected true or false/],
    ['{ m: { path: relative/dir } }', /expected an absolute path/],
    ['{ a: { path: /x/c }, b: { path: /x/c } }', /caches a and b are both mounted at \/x\/c/],
  ];
  for (const [text, re] of cases) {
    const got = problems(file(text));
    assert.ok(got.some((g) => re.test(g)), `${text}: ${got.join(' | ')}`);
    assert.ok(got.every((g) => /x\.yaml:\d+:\d+/.test(g)), `${text}: every problem has its line: ${got.join(' | ')}`);
  }
});

test('a cache path of your own must not cover the step\'s mounts or the system', () => {
  const cases: Array<[string, RegExp | undefined]> = [
    ['/home/agent/.m2/repository', undefined],
    ['/home/agent/.cache/tool', undefined],
    ['/', /cannot be mounted at \//],
    ['/home/agent', /would cover the step's \/home\/agent\/run-workspace/],
    ['/home/agent/run-workspace/node_modules', /would cover the step's \/home\/agent\/run-workspace/],
    ['/home/agent/.runner', /would cover/],
    ['/etc/tool', /under \/etc/],
    ['/proc/x', /under \/proc/],
    ['/a/../etc', /"\.\." parts/],
    ['/a:b', /cannot hold ":"/],
    ['/a,b', /cannot hold/],
    ['/var/cache/runner/npm', /where the runner mounts the caches it knows/],
  ];
  for (const [p, re] of cases) {
    const got = cachePathProblem(p);
    if (re === undefined) assert.equal(got, undefined, p);
    else assert.match(got ?? '', re, p);
  }
});
