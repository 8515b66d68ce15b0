/**
 * What a step is built from besides its plan: each add-on (caches, the company
 * network, the gateway, the agent's events, the transport) opens before the
 * step's container is made, says what it adds to the container (mounts, env,
 * files, its network, a hold before the command starts, lines for the step's
 * log), and once the container ended (or never started) is closed, in
 * reverse order, whatever happened, saying what it reports for the step's
 * record. run-step composes them and knows none of them by name.
 */
import type { AgentUsage } from '../../agents/preset.js';
import type { ContainerSpec, Mount } from '../../container/runtime.js';
import type { EndReason, StepResult } from '../step-result.js';
import type { StepContext } from '../run-step.js';

/** The step an add-on opens for: its context, and what run-step made ready for it. */
export interface AddonStep {
  c: StepContext;
  /** the step's user, as its container runs */
  user: { uid: number; gid: number };
  /** the step's io directory (outputs, the agent's files) */
  ioDir: string;
  /** the container's name: unique per run of the step */
  name: string;
  /** the labels of everything the step's run makes (its container, its gateway) */
  labels: Record<string, string>;
  /** a line in the step's log and on the console (masked) */
  say(line: string): void;
  /** a line in the step's log only (masked) */
  log(line: string): void;
  /** a line of the step's standard output, as its container's are (masked, cut at the same bound) */
  stdout(line: string): void;
  /** stops the step's container (with its grace), as a cancel does */
  stop(): void;
}

/** What an add-on adds to the step's container. Every field may be absent: the add-on adds nothing there. */
export interface AddonPart {
  mounts?: Mount[];
  /** variables under the step's own env: (the step's own win) */
  envDefaults?: Record<string, string>;
  /** variables over the step's own env: (the add-on's win) */
  env?: Record<string, string>;
  /** files handed in by the engine (swarm: configs), beside the mounts a local engine uses */
  files?: NonNullable<ContainerSpec['files']>;
  /** the step's way out, in place of its plan's network */
  way?: StepWayPart;
  /** the step's command begins once this resolves */
  holdUntil?: Promise<void>;
  /** lines for the step's log (and the console) as it starts, without the `runner: ` that run-step puts before them */
  notes?: string[];
  /** the container's spec once every add-on added its part, made over (a step on another node: its workspace by tar) */
  reshape?(spec: ContainerSpec, way: StepWayPart | undefined): Promise<ContainerSpec>;
}

export interface StepWayPart {
  network: string;
  dns?: string[];
  hosts?: Record<string, string>;
  /** where the step finds its gateway's relay to the runner (a step on another node) */
  relay?: { host: string; port: number };
}

/** What run-step hands an add-on at its close. */
export interface AddonEnd {
  /** why the container ended; undefined when it never started */
  reason: EndReason | undefined;
  /** the step's usage as the add-ons closed before this one reported it (the agent's CLI's, for the gateway) */
  usage?: AgentUsage | undefined;
}

/** What an add-on reports for the step's record, once closed. */
export interface AddonReport {
  /**
   * how the step ended, whatever its exit said: `budget_exhausted` outranks everything; `failed` outranks a plain
   * exit's status, not an engine's problem (a lost node)
   */
  status?: 'budget_exhausted' | 'failed';
  /** the step's usage: replaces what add-ons closed before reported */
  usage?: AgentUsage;
  egress?: StepResult['egress'];
  /** a code for the step's record */
  error?: string;
  /** for the step's message */
  problems?: string[];
  /** lines for the step's log (not the console), as they are */
  logLines?: string[];
  /** outputs the step gets whatever its outputs file says (an agent's final message as `result`) */
  outputs?: Record<string, string>;
}

export interface OpenAddon extends AddonPart {
  /** After the container ended, or did not start: never throws for the step's sake (a failure is the runner's warning). */
  close(end: AddonEnd): Promise<AddonReport | undefined>;
}

export interface StepAddon {
  /** for messages: "closing the step's gateway" */
  readonly name: string;
  /** Before the container is made. Throws StepRefused to refuse the step with a code of its own; nothing is left open then. */
  open(step: AddonStep): Promise<OpenAddon>;
}

/** An add-on that could not make the step ready: the step fails, not started, with this code and message. */
export class StepRefused extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'StepRefused';
  }
}

/** An add-on with nothing to add nor report (a step that does not use it). */
export const NOTHING: OpenAddon = { close: async () => undefined };
