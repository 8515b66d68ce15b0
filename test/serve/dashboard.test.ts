/** The dashboard's files as the server holds them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadDashboard } from '../../src/serve/dashboard.js';

test('the dashboard has an icon: /favicon.ico (what a browser asks for by itself) and the one its pages link, an SVG', async () => {
  const assets = await loadDashboard();
  for (const route of ['/favicon.ico', '/assets/favicon.svg']) {
    const a = assets.get(route);
    assert.ok(a, route);
    assert.equal(a.type, 'image/svg+xml');
    assert.match(a.body.toString('utf8'), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  }
  for (const page of ['/', '/login']) assert.match(assets.get(page)!.body.toString('utf8'), /<link rel="icon" href="\/assets\/favicon\.svg" type="image\/svg\+xml">/);
});
