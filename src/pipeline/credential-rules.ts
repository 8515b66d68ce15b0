/**
 * The named rules of credentials, egress rules and `inspect:` across the
 * file (see credentials.ts): every credential a step names exists, its hosts
 * are ones the step may reach, its secrets are declared and stay out of the
 * step, one credential per host; an egress list names each host once. Each
 * problem says what to write instead. Pure.
 */
import { didYouMean } from '../common/did-you-mean.js';
import { credentialSecrets, entryHost, type CredentialFile, type EgressEntry } from './credentials.js';
import { formatPath, type DocPath } from './positions.js';
import type { RuleIssue } from './rules.js';
import type { PipelineFile } from './schema.js';
import { nearest, stepWay, type WayLevel } from './step-way.js';

export function checkCredentialRules(p: PipelineFile): RuleIssue[] {
  const issues: RuleIssue[] = [];
  const credentials = p.credentials ?? {};
  const declared = new Set(p.secrets ?? []);

  for (const [name, c] of Object.entries(credentials)) {
    for (const { path, template } of credentialTemplates(name, c)) {
      for (const s of templateNames(template)) {
        if (!declared.has(s)) {
          issues.push({ path, message: `credential ${name} uses \${${s}}, which is not declared in the top-level secrets: list: add ${s} there (its value comes from the environment or --secrets-file)` });
        }
      }
    }
  }

  // Each level that says credentials:, inspect: or egress:, on its own.
  const levels: Array<{ level: WayLevel; at: DocPath }> = [
    ...(p.defaults ? [{ level: p.defaults, at: ['defaults'] as DocPath }] : []),
    ...Object.entries(p.agents ?? {}).map(([name, a]) => ({ level: a as WayLevel, at: ['agents', name] as DocPath })),
    ...p.steps.map((s, i) => ({ level: s as WayLevel, at: ['steps', i] as DocPath })),
  ];
  for (const { level, at } of levels) {
    level.credentials?.forEach((c, j) => {
      if (!Object.hasOwn(credentials, c)) {
        const known = Object.keys(credentials);
        issues.push({
          path: [...at, 'credentials', j],
          message: `unknown credential "${c}"${didYouMean(c, known)}; ${known.length ? `known credentials: ${known.join(', ')}` : 'declare it under the top-level credentials:, like github-api: { hosts: [api.github.com], header: { Authorization: "Bearer ${GITHUB_TOKEN}" } }'}`,
        });
      }
    });
    // defaults' network: is for plain steps, its credentials: and inspect: for the steps that have a gateway: both may be there
    if (level.network !== undefined && at[0] !== 'defaults') {
      for (const key of ['credentials', 'inspect'] as const) {
        if (key === 'credentials' ? (level.credentials?.length ?? 0) > 0 : level.inspect === 'all') {
          issues.push({
            path: [...at, key],
            atKey: true,
            message: `network: and ${key}: together: ${key}: is done by a gateway of the step's own, which network: does without: replace network: with egress: [the hosts the step needs]`,
          });
        }
      }
    }
    issues.push(...twiceInEgress(level.egress, [...at, 'egress']));
  }

  p.steps.forEach((step, i) => {
    const agent = step.agent !== undefined ? p.agents?.[step.agent] : undefined;
    const levels = {
      defaults: (p.defaults ?? {}) as WayLevel,
      agent: (agent ?? {}) as WayLevel,
      step: step as WayLevel,
      preset: agent?.use !== undefined,
      at: { defaults: ['defaults'], agent: agent ? ['agents', step.agent!] : undefined, step: ['steps', i] },
    };
    const named = nearest(levels, 'credentials');
    if (!named || named.value.length === 0) return;
    const used = named.value.filter((c) => Object.hasOwn(credentials, c));
    const where = named.at === levels.at.step ? '' : ` (from ${formatPath(named.at)}.credentials)`;
    const way = stepWay(levels);
    if (way && 'network' in way.way) {
      // said once where both are on one level (above); credentials from defaults are for the steps that have a gateway
      if (way.at !== named.at && named.at !== levels.at.defaults) {
        issues.push({
          path: [...named.at, 'credentials'],
          atKey: true,
          message: `step "${step.id}" takes network: ${way.way.network} from ${formatPath(way.at)}, so it has no gateway to add its credentials${where}: give it egress: [the hosts it needs] in place of network:, or credentials: [] on the step`,
        });
      }
      return;
    }
    const egress = way && 'egress' in way.way ? way.way.egress : [];
    const egressFrom = way ? `the egress: of ${formatPath(way.at)}` : `egress: on step "${step.id}" (it has none)`;
    // host → the credential that adds itself there
    const byHost = new Map<string, string>();
    for (const c of used) {
      for (const host of credentials[c]!.hosts) {
        if (!egress.some((e) => covers(entryHost(e), host))) {
          issues.push({
            path: [...named.at, 'credentials', named.value.indexOf(c)],
            message: `credential ${c} is for ${host}, which step "${step.id}" may not reach: add ${host} to ${egressFrom}, or drop ${c} from its credentials${where}`,
          });
        }
        const other = byHost.get(host);
        if (other !== undefined && other !== c) {
          issues.push({
            path: [...named.at, 'credentials', named.value.indexOf(c)],
            message: `step "${step.id}" has two credentials for ${host}, ${other} and ${c}: the gateway sets one per host, so keep one of them in its credentials${where}`,
          });
        }
        byHost.set(host, c);
      }
    }
  });
  // a credential's secret in any container (another step's or agent's secrets:) would undo what the credential is
  // for: a value one step holds reaches the others through the workspace
  const held = new Map<string, string>();
  for (const [c, cred] of Object.entries(credentials)) for (const s of credentialSecrets(cred)) if (!held.has(s)) held.set(s, c);
  const places: Array<{ secrets: string[] | undefined; at: DocPath; who: string }> = [
    ...Object.entries(p.agents ?? {}).map(([name, a]) => ({ secrets: a.secrets, at: ['agents', name, 'secrets'] as DocPath, who: `agent ${name}` })),
    ...p.steps.map((st, i) => ({ secrets: st.secrets, at: ['steps', i, 'secrets'] as DocPath, who: `step "${st.id}"` })),
  ];
  for (const { secrets, at, who } of places) {
    (secrets ?? []).forEach((s, k) => {
      const c = held.get(s);
      if (c === undefined) return;
      issues.push({
        path: [...at, k],
        message: `${s} is in credential ${c}, which keeps it out of every step, and in the secrets: of ${who}, which puts it in a container: drop it from those secrets: (the gateway adds the credential where it is listed)`,
      });
    });
  }
  return issues;
}

/** Each ${NAME} a template names (templates the schema refused name nothing here). */
function templateNames(template: string): string[] {
  return [...template.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!);
}

function credentialTemplates(name: string, c: CredentialFile): Array<{ path: DocPath; template: string }> {
  if (c.basic) {
    return [
      { path: ['credentials', name, 'basic', 'username'], template: c.basic.username },
      { path: ['credentials', name, 'basic', 'password'], template: c.basic.password },
    ];
  }
  return Object.entries(c.header ?? {}).map(([h, t]) => ({ path: ['credentials', name, 'header', h], template: t }));
}

/** A host listed twice in one egress list (once with rules, or twice): which entry holds? */
function twiceInEgress(egress: EgressEntry[] | undefined, at: DocPath): RuleIssue[] {
  const seen = new Map<string, number>();
  const issues: RuleIssue[] = [];
  egress?.forEach((e, j) => {
    const host = entryHost(e).toLowerCase().split(':')[0]!;
    const first = seen.get(host);
    if (first === undefined) {
      seen.set(host, j);
      return;
    }
    if (typeof e === 'string' && typeof egress[first] === 'string') return; // the same host twice: harmless
    issues.push({
      path: [...at, j],
      message: `${host} is listed twice in this egress: (also at [${first}]): its rules would be unclear: keep one entry, { host: ${host}, methods: […], paths: […] } with every method and path it needs`,
    });
  });
  return issues;
}

/**
 * Whether an egress entry (a name or a `*.` suffix, with an optional port) lets the step reach every host a
 * credential's host pattern names: an exact name by the same name or a suffix over it; a `*.` suffix only by a
 * suffix as wide or wider.
 */
export function covers(egressHost: string, credentialHost: string): boolean {
  const e = egressHost.toLowerCase().split(':')[0]!;
  const c = credentialHost.toLowerCase();
  if (!e.startsWith('*.')) return e === c;
  const base = e.slice(2);
  const name = c.startsWith('*.') ? c.slice(2) : c;
  return c.startsWith('*.') ? name === base || name.endsWith(`.${base}`) : name.endsWith(`.${base}`);
}
