/**
 * The parts of a pipeline file that the step's gateway holds for it, never the
 * step: `credentials:` (headers or HTTP basic, set per host, their values made
 * of the file's secrets), egress entries with method and path rules
 * (`{ host, methods, paths, stream }`), and `inspect: all`. The schema pieces
 * and the `${SECRET}` templates; the checks across the file are in
 * credential-rules.ts. Pure.
 */
import { pathGlobProblem } from '../gateway/request-rules.js';
import { z } from 'zod';
import { hostPatternProblem } from '../gateway/hosts.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** RFC 9110's token: what a method and a header name are made of. */
export const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Headers a credential may not set: hop-by-hop ones (they speak of one connection, not of the request the host
 * receives), Host (the gateway sends the host it checked) and Content-Length (the gateway frames the body).
 */
const NOT_SETTABLE = new Map<string, string>([
  ...['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'].map(
    (h) => [h, 'is a hop-by-hop header (it speaks of one connection, and never reaches the host)'] as [string, string],
  ),
  ['host', 'is the host the request goes to, which the gateway sets to the one it checked'],
  ['content-length', "frames the request's body, which the gateway does"],
]);

/** What is wrong with a header name a credential sets, with what to write instead; undefined when it may be set. */
export function headerNameProblem(name: string): string | undefined {
  if (!HTTP_TOKEN.test(name)) return `${JSON.stringify(name)} is not a header name: write one like Authorization or X-Api-Key (letters, digits and - only)`;
  const why = NOT_SETTABLE.get(name.toLowerCase());
  return why ? `header ${name} ${why}: a credential sets a header the host reads, like Authorization or X-Api-Key` : undefined;
}

/** A piece of a `${SECRET}` template: text as it is, or a secret's name. */
export type TemplatePart = { text: string } | { secret: string };

/** `Bearer ${GITHUB_TOKEN}` → its parts; a `$` not followed by `{` is text; a `${` that is not `${NAME}` is a problem. */
export function parseSecretTemplate(template: string): TemplatePart[] | { problem: string } {
  const parts: TemplatePart[] = [];
  let rest = template;
  for (;;) {
    const at = rest.indexOf('${');
    if (at < 0) break;
    if (at > 0) parts.push({ text: rest.slice(0, at) });
    const end = rest.indexOf('}', at);
    const name = end < 0 ? '' : rest.slice(at + 2, end);
    if (end < 0 || !ENV_NAME.test(name)) {
      return { problem: `${JSON.stringify(template)}: "\${" starts a secret's name, written \${NAME} with NAME one of the top-level secrets:, like "Bearer \${GITHUB_TOKEN}"` };
    }
    parts.push({ secret: name });
    rest = rest.slice(end + 1);
  }
  if (rest) parts.push({ text: rest });
  return parts;
}

/** The secrets a template names, in order, once each; none when it is not a template (the schema says why). */
export function templateSecrets(template: string): string[] {
  const parts = parseSecretTemplate(template);
  if (!Array.isArray(parts)) return [];
  return [...new Set(parts.flatMap((p) => ('secret' in p ? [p.secret] : [])))];
}

/** The template with its secrets' values in place. Throws for a secret it is not given (the run resolved them all first). */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  const parts = parseSecretTemplate(template);
  if (!Array.isArray(parts)) throw new Error(parts.problem);
  return parts
    .map((p) => {
      if ('text' in p) return p.text;
      const v = values[p.secret];
      if (v === undefined) throw new Error(`secret ${p.secret} has no value`);
      return v;
    })
    .join('');
}

const template = z.string().superRefine((t, ctx) => {
  const parts = parseSecretTemplate(t);
  if (!Array.isArray(parts)) ctx.addIssue({ code: 'custom', message: parts.problem });
  // a header's value on the wire is one line
  else if (/[\r\n\0]/.test(t)) ctx.addIssue({ code: 'custom', message: 'a header value is one line: no line breaks or NUL' });
});

/** A host a credential is added on: exact, or a `*.` suffix where the file says so; no port (it holds on every port the step may use). */
const credentialHost = z.string().superRefine((h, ctx) => {
  const problem = hostPatternProblem(h);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
  else if (h.includes(':')) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(h)}: a credential holds on every port its host is allowed on: write the name alone (${h.split(':')[0]})` });
});

export const basicSchema = z.strictObject({
  username: template.refine((u) => !u.includes(':'), 'an HTTP basic username has no ":" (it separates the username from the password)'),
  password: template,
});

export const credentialSchema = z
  .strictObject({
    /** where the gateway adds it: exact names, `*.` suffixes only where written */
    hosts: z.array(credentialHost).min(1, 'expected at least one host, like [api.github.com]'),
    /** headers set on every request to those hosts, replacing what the step sent */
    header: z
      .record(z.string(), template)
      .refine((h) => Object.keys(h).length > 0, 'expected at least one header, like { Authorization: "Bearer ${TOKEN}" }')
      .optional(),
    /** HTTP basic: an Authorization header made of these */
    basic: basicSchema.optional(),
  })
  .superRefine((c, ctx) => {
    if ((c.header === undefined) === (c.basic === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'a credential has header: { Name: "value with ${SECRET}" } or basic: { username, password }: one of them' });
    }
    for (const n of Object.keys(c.header ?? {})) {
      const problem = headerNameProblem(n);
      if (problem) ctx.addIssue({ code: 'custom', path: ['header', n], message: problem });
    }
    const names = Object.keys(c.header ?? {}).map((n) => n.toLowerCase());
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) ctx.addIssue({ code: 'custom', path: ['header'], message: `header ${twice} is set twice (header names are not case-sensitive): keep one` });
  });

/** A request method: an HTTP token, kept upper-case (the gateway folds the request's case before comparing). */
const method = z
  .string()
  .regex(HTTP_TOKEN, 'expected an HTTP method like GET or POST')
  .transform((m) => m.toUpperCase());

/** A glob over a request's path (`*` within a segment, `**` across), the query excluded. */
const pathGlob = z.string().superRefine((p, ctx) => {
  if (!p.startsWith('/')) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(p)}: a path starts with "/", like "/repos/acme/app/**"` });
  else if (/[?#]/.test(p)) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(p)}: paths are matched without the query or fragment: write the path alone, like "${p.split(/[?#]/)[0]}"` });
  else if (/[\s\0-\x1f]/.test(p)) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(p)}: a path has no spaces or control characters (write them %-encoded)` });
  else {
    // the gateway's own test of a glob: one that could never match a normalized path is refused here, not at the request
    const problem = pathGlobProblem(p);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }
});

const hostPattern = z.string().superRefine((h, ctx) => {
  const problem = hostPatternProblem(h);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

export const egressRuleSchema = z.strictObject({
  host: hostPattern,
  /** methods allowed (any other gets 403); absent: any */
  methods: z.array(method).min(1, 'expected at least one method, like [GET]; leave methods: out to allow any').optional(),
  /** path globs allowed; absent: any */
  paths: z.array(pathGlob).min(1, 'expected at least one path, like ["/repos/acme/app/**"]; leave paths: out to allow any').optional(),
  /** a body over the gateway's bound (10 MiB) is checked as it streams rather than refused */
  stream: z.boolean().optional(),
});

/** An entry of `egress:`: a host (today's form), or a host with rules. */
export const egressEntrySchema = z.union([hostPattern, egressRuleSchema], {
  error: 'expected a host like registry.npmjs.org, or { host: api.github.com, methods: [GET], paths: ["/repos/acme/**"] }',
});

/** `inspect: all`: every allowed host is inspected (secrets checked); `rules` (the default): only hosts with a credential or a rule. */
export const INSPECT_VALUES = ['all', 'rules'] as const;
export const inspectSchema = z.enum(INSPECT_VALUES, { error: 'expected inspect: all (every allowed host inspected) or inspect: rules (only hosts with a credential or a rule; the default)' });

export type EgressEntry = z.output<typeof egressEntrySchema>;
export type EgressRule = z.output<typeof egressRuleSchema>;
export type CredentialFile = z.output<typeof credentialSchema>;

/** The host (with its port, if any) an egress entry allows. */
export function entryHost(e: EgressEntry): string {
  return typeof e === 'string' ? e : e.host;
}

/** An entry that asks the gateway to judge requests (methods or paths): it is inspected. */
export function hasRules(e: EgressEntry): e is EgressRule {
  return typeof e !== 'string' && (e.methods !== undefined || e.paths !== undefined);
}

/** An egress entry in the file's words, for refusals: `{ host: api.github.com, methods: [GET, POST], paths: ["/repos/acme/app/**"] }`. */
export function describeEntry(e: EgressEntry): string {
  if (typeof e === 'string') return e;
  const parts = [`host: ${e.host}`];
  if (e.methods) parts.push(`methods: [${e.methods.join(', ')}]`);
  if (e.paths) parts.push(`paths: [${e.paths.map((p) => JSON.stringify(p)).join(', ')}]`);
  if (e.stream !== undefined) parts.push(`stream: ${e.stream}`);
  return `{ ${parts.join(', ')} }`;
}

/** Every secret a credential's values name. */
export function credentialSecrets(c: CredentialFile): string[] {
  const templates = c.basic ? [c.basic.username, c.basic.password] : Object.values(c.header ?? {});
  return [...new Set(templates.flatMap(templateSecrets))];
}

export const CREDENTIAL_KEYS = ['hosts', 'header', 'basic'];
export const BASIC_KEYS = ['username', 'password'];
export const EGRESS_RULE_KEYS = ['host', 'methods', 'paths', 'stream'];
