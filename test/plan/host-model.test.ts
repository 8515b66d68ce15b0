import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostModel, isLoopbackHost, namesThisMachine } from '../../src/plan/host-model.js';

test('the loopback, localhost and the names containers give the host are this machine; other hosts are not', () => {
  for (const url of ['http://127.0.0.1:11434', 'http://localhost:8000/v1', 'http://LOCALHOST.:1', 'http://127.1.2.3:9', 'http://[::1]:11434', 'http://0.0.0.0:8080', 'http://host.docker.internal:11434', 'https://api.localhost/v1']) {
    assert.equal(namesThisMachine(url), true, url);
  }
  for (const url of ['https://api.anthropic.com', 'http://192.168.1.5:11434', 'http://172.17.0.1:11434', 'http://127.example.com', 'not a url', undefined, '']) {
    assert.equal(namesThisMachine(url), false, String(url));
  }
  assert.equal(isLoopbackHost('[::1]'), true);
  assert.equal(isLoopbackHost('10.0.0.1'), false);
});

test("a model on this machine: where the runner reaches it, its address as said, and its API root's path", () => {
  assert.deepEqual(hostModel('http://127.0.0.1:11434'), { shown: 'http://127.0.0.1:11434', protocol: 'http:', host: '127.0.0.1', port: 11434, path: '' });
  assert.deepEqual(hostModel('http://localhost:8000/api/v1/'), { shown: 'http://localhost:8000', protocol: 'http:', host: 'localhost', port: 8000, path: '/api/v1' });
  // the names containers use for the host, and 0.0.0.0, are the loopback to a process on the host
  assert.equal(hostModel('http://host.docker.internal:11434')?.host, '127.0.0.1');
  assert.equal(hostModel('http://0.0.0.0:11434')?.host, '127.0.0.1');
  assert.equal(hostModel('http://[::1]:11434')?.host, '::1');
  assert.deepEqual(hostModel('https://localhost')?.port, 443);
  assert.equal(hostModel('http://localhost')?.port, 80);
  assert.equal(hostModel('https://api.openai.com/v1'), undefined);
  assert.equal(hostModel('ftp://127.0.0.1/'), undefined);
  assert.equal(hostModel(undefined), undefined);
});
