import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamCaps } from '../../src/serve/stream-caps.js';

test('one address gets its cap, then 429; all together get the total, then 503; a place given back is free again, once', () => {
  const caps = new StreamCaps({ total: 5, perClient: 2 });
  const a1 = caps.admit('10.0.0.1');
  const a2 = caps.admit('10.0.0.1');
  assert.ok(a1.ok && a2.ok);
  const a3 = caps.admit('10.0.0.1');
  assert.ok(!a3.ok);
  assert.equal(a3.status, 429);
  assert.ok(a3.retryAfter > 0);
  assert.match(a3.message, /^10\.0\.0\.1 already follows 2 live logs, the most one address may \(--max-log-streams-per-client\): close one .* and try again$/);

  const others = ['10.0.0.2', '10.0.0.3', '10.0.0.4'].map((c) => caps.admit(c));
  assert.ok(others.every((o) => o.ok));
  assert.equal(caps.count(), 5);
  const full = caps.admit('10.0.0.5');
  assert.ok(!full.ok);
  assert.equal(full.status, 503);
  assert.match(full.message, /already serves 5 live logs, the most it takes \(--max-log-streams\): try again once some have ended, or start it with a higher --max-log-streams$/);
  const greedyWhenFull = caps.admit('10.0.0.1');
  assert.equal(!greedyWhenFull.ok && greedyWhenFull.status, 429, 'an address past its own cap hears about its own cap');

  a1.release();
  a1.release(); // twice: still one place
  assert.equal(caps.count(), 4);
  assert.equal(caps.count('10.0.0.1'), 1);
  assert.ok(caps.admit('10.0.0.5').ok);
  assert.ok(!caps.admit('10.0.0.6').ok, 'the second release gave nothing back');
});
