/**
 * The add-ons every step is built from, in the order they open (they close in
 * reverse): a step that does not use one gets nothing from it.
 */
import type { StepTransport } from '../../container/runtime.js';
import type { StepAddon } from './addon.js';
import { agentEventsAddon } from './agent-events.js';
import { cachesAddon } from './caches.js';
import { companyNetworkAddon } from './company-network.js';
import { gatewayAddon } from './gateway.js';
import { transportAddon } from './transport.js';

export function stepAddons(transport: StepTransport): StepAddon[] {
  return [
    // mounted after the step's own mounts, their settings over its env
    cachesAddon(transport),
    // the CA bundle mounted after them, the network's variables under the step's env
    companyNetworkAddon,
    // the step's network: its gateway's, which (another node) relays its workspace too
    gatewayAddon(transport.gateways),
    // follows the CLI's events while the step runs; closed after the transport brought its files back
    agentEventsAddon,
    // last: it makes the finished spec over, and its work comes back first
    transportAddon(transport),
  ];
}
