/**
 * What a step's gateway inspects (GatewayConfig.inspect), from its plan and
 * the run's secrets: one InspectedHost per host with rules or a credential
 * (a rule's host takes the credential that covers it, exact before `*.`),
 * the credentials' headers filled in (basic made an Authorization header),
 * every secret value the run holds for the gateway to stop on its way out,
 * and the bound on a request body held whole. The values exist here and in
 * the gateway's stdin only: never in a plan, an env, a record or a log. Pure.
 */
import type { InspectedHost, Inspection } from '../gateway/config.js';
import { ruleFor } from '../gateway/request-rules.js';
import { fillTemplate } from '../pipeline/credentials.js';
import type { CredentialPlan, GatewayPlan } from './step-plan.js';

/** A request body is held and checked whole up to this; larger ones are refused unless their host says stream: true. */
export const MAX_INSPECTED_BODY = 10 * 1024 ** 2;

/** The step's gateway terminates TLS for some host (a credential, a method or path rule, inspect: all): its step must trust the gateway's CA. */
export function inspectsTls(g: GatewayPlan | undefined): boolean {
  if (!g) return false;
  return g.inspectAll === true || (g.credentials?.length ?? 0) > 0 || (g.rules ?? []).some((r) => r.methods !== undefined || r.paths !== undefined);
}

/**
 * The gateway's inspect config, or undefined when it has nothing to inspect nor any secret to watch for.
 * `secrets`: every secret the run holds (a value one step had can reach another through the workspace).
 */
export function inspectionFor(g: GatewayPlan, secrets: Readonly<Record<string, string>>): Inspection | undefined {
  const hosts = new Map<string, InspectedHost>();
  const credentials = g.credentials ?? [];
  for (const r of g.rules ?? []) {
    // stream: alone asks for no inspection; it says how to read a host inspected for another reason
    const ruled = r.methods !== undefined || r.paths !== undefined;
    if (!ruled && !g.inspectAll && !credentialFor(credentials, hostName(r.host))) continue;
    const host = hostName(r.host);
    hosts.set(host, {
      host,
      ...(r.methods ? { methods: r.methods.map((m) => m.toUpperCase()) } : {}),
      ...(r.paths ? { paths: r.paths } : {}),
      ...(r.stream ? { stream: true } : {}),
      rule: r.rule,
    });
  }
  // a credential's host without a rule of its own keeps the rule of the `*.` entry over it: naming it for a
  // credential must not lift that rule's methods and paths (the exact name would win over the suffix)
  const ruled = [...hosts.values()];
  for (const c of credentials) {
    for (const h of c.hosts) {
      const host = h.toLowerCase();
      if (hosts.has(host)) continue;
      const over = ruleFor(ruled, host);
      hosts.set(host, over ? { ...over, host } : { host });
    }
  }
  // each host its credential: its own, else the `*.` suffix over it
  for (const [host, entry] of hosts) {
    const c = credentialFor(credentials, host);
    if (c) entry.credential = { name: c.name, headers: credentialHeaders(c, secrets), secrets: [...c.secrets] };
    else delete entry.credential;
  }
  const held = Object.entries(secrets)
    .filter(([, value]) => value !== '')
    .map(([name, value]) => ({ name, value }));
  if (hosts.size === 0 && !g.inspectAll && held.length === 0) return undefined;
  return { hosts: [...hosts.values()], ...(g.inspectAll ? { all: true } : {}), secrets: held, maxBodyBytes: MAX_INSPECTED_BODY };
}

/** The headers a credential sets, its secrets filled in. */
export function credentialHeaders(c: CredentialPlan, secrets: Readonly<Record<string, string>>): Record<string, string> {
  if (c.basic) {
    const user = fillTemplate(c.basic.username, secrets);
    const password = fillTemplate(c.basic.password, secrets);
    return { Authorization: `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}` };
  }
  return Object.fromEntries(Object.entries(c.header ?? {}).map(([name, t]) => [name, fillTemplate(t, secrets)]));
}

/**
 * What is wrong with the values the credentials get (a secret with a line break would split its header; a basic
 * username with ":" would move the password), said by name, never by value; for the run's start, before anything exists.
 */
export function credentialValueProblems(g: GatewayPlan | undefined, secrets: Readonly<Record<string, string>>): string[] {
  const problems: string[] = [];
  for (const c of g?.credentials ?? []) {
    for (const s of c.secrets) {
      if (/[^\t\x20-\x7e\x80-\xff]/.test(secrets[s] ?? '')) {
        problems.push(`secret ${s}, used by credential ${c.name}, holds a line break, a control character or a character beyond Latin-1, which an HTTP header cannot carry: give its value as the service issued it, on one line`);
      }
    }
    if (c.basic && fillTemplate(c.basic.username, secrets).includes(':')) {
      problems.push(`credential ${c.name}: its basic username holds ":" once its secrets are filled in, which HTTP basic cannot carry (":" ends the username)`);
    }
  }
  return [...new Set(problems)];
}

/** The credential for a host: the one naming it exactly, else the one whose `*.` suffix covers it. */
function credentialFor(credentials: readonly CredentialPlan[], host: string): CredentialPlan | undefined {
  const h = host.toLowerCase();
  return (
    credentials.find((c) => c.hosts.some((x) => x.toLowerCase() === h)) ??
    credentials.find((c) => c.hosts.some((x) => x.startsWith('*.') && (h.startsWith('*.') ? h.endsWith(x.slice(1)) && h !== x : h.endsWith(x.slice(1)))))
  );
}

/** An egress host without its port: the rule holds on every port the step may use. */
function hostName(host: string): string {
  return host.toLowerCase().split(':')[0]!;
}
