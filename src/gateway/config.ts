/**
 * What the runner hands a step's gateway (as one line of JSON on the
 * gateway's standard input, so no secret is in its container's environment,
 * command or labels, where anyone who reads the engine's API would see it),
 * and what the gateway reports back (one JSON object per line on its stdout).
 * Shared by both sides; no imports beyond src/gateway, since the gateway's
 * image carries only this folder.
 */
import type { ModelApiKind } from './usage-meter.js';
import type { Price } from './prices.js';
import type { UpstreamProxy } from './upstream-proxy.js';

export const GATEWAY_PORT = 3128;
/** where a relay listens, when the config asks for one */
export const RELAY_PORT = 3129;
/** the name a step reaches its gateway by, on the step's own network */
export const GATEWAY_HOST = 'runner-gateway';

export interface ModelRoute {
  kind: ModelApiKind;
  /** the API root calls go to: the provider's, or the agent's base_url */
  upstream: string;
  /** the credential added on the way out; none for a model that takes none */
  auth?: { header: 'x-api-key' | 'authorization'; value: string };
}

export interface Allowance {
  usd?: number;
  tokens?: number;
  /** which budget binds, in words, for the refusal: "the step's budget of $5" */
  usdBy?: string;
  tokensBy?: string;
}

/**
 * A host the gateway inspects: it terminates the step's TLS to it with the gateway's own CA (made at its start;
 * the key never leaves the gateway), judges each request by these rules, adds the credential, and re-encrypts
 * upstream with full verification. Every other allowed host keeps the SNI-checked tunnel.
 */
export interface InspectedHost {
  /** an exact name or a `*.` suffix, as in allow (no port: the rule holds on every port allow lets it use) */
  host: string;
  /** upper-case methods allowed; absent: any */
  methods?: string[];
  /** globs over the request's path (query excluded, after normalization: dot segments, `//`, %-decoding of unreserved characters); absent: any */
  paths?: string[];
  /** a body larger than inspect.maxBodyBytes is checked in a sliding window as it streams, not refused */
  stream?: boolean;
  /** which egress entry of the file made this rule, in the file's words, for refusals: `{ host: api.github.com, methods: [GET] }` */
  rule?: string;
  /** set on every request to the host, replacing what the step sent; named as in the file's credentials: */
  credential?: {
    name: string;
    headers: Record<string, string>;
    /** the secrets its headers are made of, by name (of inspect.secrets): an answer that carries one of them back is cut */
    secrets?: string[];
  };
}

export interface Inspection {
  hosts: InspectedHost[];
  /** inspect: all: every allowed host is inspected (secrets checked), rules or not */
  all?: boolean;
  /** every secret value the run holds (step secrets and credentials' values), by name: none may leave in a request the gateway reads */
  secrets: Array<{ name: string; value: string }>;
  /** a request body is held and checked whole up to this size (10 MiB); larger: refused unless its host says stream */
  maxBodyBytes: number;
}

export interface GatewayConfig {
  /** hosts the proxy lets through: exact names and `*.` suffixes, each with an optional `:port` */
  allow: string[];
  /** every address of the machine the runner runs on: an allowed name that resolves to one is refused */
  hostAddresses?: string[];
  /** private ranges (CIDR) an allowed name may resolve to (--egress-private); any other private address is refused */
  privateAllowed?: string[];
  /** the networks the runner's machine is directly on (CIDR): refused unless in privateAllowed */
  hostNetworks?: string[];
  model?: ModelRoute;
  /** what the step may still spend; absent: no limit */
  allowance?: Allowance;
  prices: Record<string, Price>;
  /** the step's network (CIDR): the gateway listens there only, never on its way out */
  listenSubnet: string;
  /** a TCP port on the step's network joined to one address and nothing else (a swarm step's way to the runner's transfer) */
  relay?: { port: number; to: { host: string; port: number } };
  /** a PEM bundle the gateway trusts besides Node's own roots, for its own TLS (a model call through a TLS-inspecting proxy) */
  ca?: string;
  /** the host's own bundle when the step does not trust it: never trusted here, only checked against to tell why an upstream is refused (trust-probe.ts) */
  hostCa?: string;
  /** the company's proxy the gateway reaches out through (--egress-proxy, or the runner's HTTPS_PROXY) */
  proxy?: UpstreamProxy;
  /** hosts to inspect (credentials, method and path rules, secret checks): absent, every allowed host is a tunnel */
  inspect?: Inspection;
  /** after this long the gateway stops by itself (the step's timeout and then some): a runner that died cannot stop it */
  deadlineMs?: number;
}

export interface CallEvent {
  event: 'call';
  /** the call's number in its gateway, as its call_start said (absent on a refusal) */
  id?: number;
  /** what the budgets were charged, in USD: the cost, or (an unpriced model against a USD budget, a worst case) the dearest price's */
  chargedUsd?: number;
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** null: the model is not in the price table */
  costUsd: number | null;
  durationMs: number;
  /** the upstream's HTTP status, or the gateway's own refusal (400) or failure (502) */
  status: number;
  /** `budget`: refused for the budget (said for the first such call only; the rest are counted); `path`: not a model call (said once per path, the rest counted) */
  refused?: 'budget' | 'path';
  /** METHOD /path of a refused call */
  path?: string;
  /**
   * The answer did not report its usage (the step hung up before it came and
   * the gateway could not read it to the end, or the API sent none): the call
   * is charged at its worst case, its input as large as its request and its
   * output as long as it allowed.
   */
  worstCase?: true;
}

/**
 * An allowed upstream whose certificate the step's trust refuses (trust-probe.ts): said once per host and port, as
 * soon as the step first asks for it. `hostTrusts`: its chain verifies against the host's own bundle (a
 * TLS-inspecting proxy whose root the host has and the step was not given).
 */
export interface UntrustedEvent {
  event: 'untrusted';
  host: string;
  port: number;
  /** OpenSSL's code for why it did not verify (SELF_SIGNED_CERT_IN_CHAIN, CERT_HAS_EXPIRED, ...) */
  reason: string;
  /** who issued the chain's top certificate, as its subject says (CN=..., O=...) */
  issuer: string;
  hostTrusts: boolean;
}

/** A call goes to the model: should the gateway die before it settles, the runner charges it this (its worst case). */
export interface CallStartEvent {
  event: 'call_start';
  id: number;
  model: string | null;
  worst: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number; costUsd: number };
}

export type GatewayEvent =
  /** caPem: the certificate of the gateway's own CA, when it inspects (the step trusts it; its key stays in the gateway) */
  | { event: 'ready'; address: string; caPem?: string }
  /** a request to an inspected host refused by its rules: `rule` as the file wrote it */
  | { event: 'egress_refused'; host: string; method: string; path: string; rule: string; reason: string }
  /** a request that carried a secret's value (in `where`): the secret named, never its value */
  | { event: 'secret_refused'; host: string; secret: string; where: 'url' | 'header' | 'body' | 'answer'; form: string }
  | CallStartEvent
  | CallEvent
  | { event: 'refused'; host: string; reason: string }
  /** an allowed host the gateway could not reach (its name, its connection): once per host and port */
  | { event: 'unreachable'; host: string; port: number; reason: string }
  | UntrustedEvent
  /** when it stops: refused hosts with their counts, refusals past the bound on hosts, model calls refused for the budget */
  | { event: 'refusals'; hosts: Record<string, number>; others: number; budget: number; paths?: number }
  | { event: 'error'; message: string };

/** The config from its JSON, or a message saying what is wrong with it. */
export function parseConfig(text: string | undefined): GatewayConfig | string {
  if (!text) return 'no config on standard input (the runner writes it there as one line of JSON)';
  let c: GatewayConfig;
  try {
    c = JSON.parse(text) as GatewayConfig;
  } catch (err) {
    return `the config on standard input is not JSON: ${(err as Error).message}`;
  }
  if (typeof c !== 'object' || c === null) return 'the config must be a JSON object';
  if (!Array.isArray(c.allow) || !c.allow.every((h) => typeof h === 'string')) return 'allow must be a list of host names';
  for (const key of ['hostAddresses', 'privateAllowed', 'hostNetworks'] as const) {
    if (c[key] !== undefined && !(Array.isArray(c[key]) && c[key].every((a) => typeof a === 'string'))) return `${key} must be a list of strings`;
  }
  if (typeof c.listenSubnet !== 'string' || !/^\d+\.\d+\.\d+\.\d+\/\d+$/.test(c.listenSubnet)) return 'listenSubnet must be an IPv4 CIDR';
  if (c.model && (typeof c.model.upstream !== 'string' || !/^https?:\/\//.test(c.model.upstream))) return 'model.upstream must be an http(s) URL';
  if (typeof c.prices !== 'object' || c.prices === null) return 'prices must be an object';
  if (c.ca !== undefined && typeof c.ca !== 'string') return 'ca must be a PEM text';
  if (c.hostCa !== undefined && typeof c.hostCa !== 'string') return 'hostCa must be a PEM text';
  if (c.proxy !== undefined && !(typeof c.proxy?.host === 'string' && Number.isInteger(c.proxy.port) && Array.isArray(c.proxy.noProxy))) return 'proxy must be { host, port, noProxy }';
  if (c.inspect !== undefined) {
    const problem = inspectionProblem(c.inspect);
    if (problem) return `inspect: ${problem}`;
  }
  if (c.relay && !(Number.isInteger(c.relay.port) && typeof c.relay.to?.host === 'string' && Number.isInteger(c.relay.to.port))) return 'relay must be { port, to: { host, port } }';
  return c;
}

const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/** What is wrong with an inspection's settings, or undefined. */
function inspectionProblem(i: Inspection): string | undefined {
  if (typeof i !== 'object' || i === null) return 'must be an object';
  if (!Array.isArray(i.hosts)) return 'hosts must be a list';
  for (const h of i.hosts) {
    if (typeof h?.host !== 'string' || !/^(\*\.)?[a-z0-9.-]+$/.test(h.host)) return `hosts: ${JSON.stringify(h?.host)} is not a host name (lower case, or a *. suffix, no port)`;
    if (h.methods !== undefined && !(isStrings(h.methods) && h.methods.every((m) => /^[!#$%&'*+.^_`|~0-9A-Z-]+$/.test(m)))) return `${h.host}: methods must be upper-case HTTP tokens`;
    if (h.paths !== undefined && !(isStrings(h.paths) && h.paths.every((p) => p.startsWith('/')))) return `${h.host}: paths must be globs starting with /`;
    if (h.stream !== undefined && typeof h.stream !== 'boolean') return `${h.host}: stream must be true or false`;
    if (h.rule !== undefined && typeof h.rule !== 'string') return `${h.host}: rule must be text`;
    if (h.credential !== undefined) {
      const c = h.credential;
      if (typeof c?.name !== 'string' || typeof c.headers !== 'object' || c.headers === null) return `${h.host}: credential must be { name, headers }`;
      for (const [k, v] of Object.entries(c.headers)) {
        if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(k) || typeof v !== 'string' || /[\r\n\0]/.test(v)) return `${h.host}: credential ${c.name} has a header that is not a header name and one-line value`;
      }
    }
  }
  if (i.all !== undefined && typeof i.all !== 'boolean') return 'all must be true or false';
  if (!Array.isArray(i.secrets) || !i.secrets.every((s) => typeof s?.name === 'string' && typeof s.value === 'string')) return 'secrets must be a list of { name, value }';
  if (!Number.isInteger(i.maxBodyBytes) || i.maxBodyBytes < 1 || i.maxBodyBytes > 64 * 1024 ** 2) return 'maxBodyBytes must be a whole number of bytes up to 64 MiB (what the gateway holds of all requests at once)';
  return undefined;
}
