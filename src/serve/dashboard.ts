/**
 * The dashboard's files: a page, a script and its style sheets, read once at
 * start from dashboard/ beside this module (scripts/bundle-dashboard.mjs
 * bundles the script's modules and puts them there).
 * The script builds the page from the JSON API with textContent only, and the
 * Content-Security-Policy allows no inline script at all: whatever a step
 * printed is shown as text.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { RunnerError } from '../common/errors.js';
import { packageRoot } from '../common/package-root.js';

export interface Asset {
  type: string;
  body: Buffer;
}

export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

const FILES: Record<string, string> = {
  '/': 'index.html',
  '/login': 'login.html',
  '/assets/app.js': 'app.js',
  '/assets/style.css': 'style.css',
  '/assets/diff2html.css': 'diff2html.css',
  '/assets/favicon.svg': 'favicon.svg',
  // what a browser asks for by itself, before it reads the page's icon link
  '/favicon.ico': 'favicon.svg',
};

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

export async function loadDashboard(dir = path.join(packageRoot(), 'dist/src/serve/dashboard/')): Promise<Map<string, Asset>> {
  const assets = new Map<string, Asset>();
  for (const [route, file] of Object.entries(FILES)) {
    const body = await readFile(`${dir}${file}`).catch(() => {
      throw new RunnerError('dashboard_missing', `the dashboard's ${file} is missing from ${dir}: build the runner with make build`);
    });
    assets.set(route, { type: TYPES[file.slice(file.lastIndexOf('.') + 1)]!, body });
  }
  return assets;
}

/** The login page with a line saying the last token was wrong. */
export function withLoginError(page: Asset, message: string): Asset {
  const note = `<p class="error">${message.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)}</p>`;
  return { ...page, body: Buffer.from(page.body.toString('utf8').replace('<!--error-->', note)) };
}

/** The page with its Log out button shown (a server with a token; without one there is no session to end). */
export function withLogout(page: Asset): Asset {
  return { ...page, body: Buffer.from(page.body.toString('utf8').replace('<form id="logout" method="post" action="/logout" hidden>', '<form id="logout" method="post" action="/logout">')) };
}
