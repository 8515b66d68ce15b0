/**
 * The company's network every step gets (src/plan/company-network.ts): its CA
 * bundle where the variables point and where the image's own tools look by
 * default (mounted from the run's copy on a local engine, handed in as files
 * where the engine cannot mount: swarm), and the variables that point the
 * usual tools at the bundle and the mirrors, under the step's own env.
 */
import { CA_PATH, networkEnv, SYSTEM_BUNDLE_PATH, type CompanyNetwork } from '../../plan/company-network.js';
import { inspectsTls } from '../../plan/gateway-inspection.js';
import { NOTHING, type AddonPart, type StepAddon } from './addon.js';

export const companyNetworkAddon: StepAddon = {
  name: 'company network',
  open: async ({ c }) => {
    // a step whose gateway inspects TLS gets the bundle from the gateway add-on: the company's with the gateway's CA
    const part = companyPart(c.spending.company, { bundleElsewhere: inspectsTls(c.plan.gateway) });
    return part ? { ...part, close: async () => undefined } : NOTHING;
  },
};

/** What the company's network adds to a step; undefined when the run has none. `bundleElsewhere`: its env only, the bundle's files are another add-on's. Pure. */
export function companyPart(company: CompanyNetwork | undefined, o: { bundleElsewhere?: boolean } = {}): AddonPart | undefined {
  if (!company) return undefined;
  const ca = company.ca?.hostPath && !o.bundleElsewhere ? company.ca : undefined;
  return {
    // the step's own env: wins over the company network's (a step may name another registry, or its own bundle)
    envDefaults: networkEnv(company),
    ...(ca
      ? {
          mounts: [CA_PATH, SYSTEM_BUNDLE_PATH].map((target) => ({ source: ca.hostPath!, target, readOnly: true })),
          files: [CA_PATH, SYSTEM_BUNDLE_PATH].map((target) => ({ target, data: ca.pem, secret: false })),
        }
      : {}),
  };
}
