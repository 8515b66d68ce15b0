/**
 * What a step's log says when its gateway found that an allowed host's
 * certificate will be refused by the step (src/gateway/trust-probe.ts): the
 * host, who issued its chain, why it fails, and the setting that fixes it,
 * in the words of how this run's trust was given (the host's bundle by
 * default, `--ca-file none`, another `--ca-file`). Pure.
 */
import type { UntrustedEvent } from '../gateway/config.js';
import type { CompanyNetwork } from './company-network.js';

/** The host's usual bundle, named when the host had none to check against. */
const USUAL_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/** A field of the gateway's event as a log may show it: one line, printable, bounded. */
const shown = (v: unknown, max: number) => String(v ?? '').replace(/[\x00-\x1f\x7f-\x9f]/g, '?').slice(0, max);

export function untrustedLine(e: UntrustedEvent, company: CompanyNetwork | undefined): string {
  const port = Number.isInteger(e.port) ? e.port : 443;
  const where = port === 443 ? shown(e.host, 255) : `${shown(e.host, 255)}:${port}`;
  const reason = shown(e.reason, 100);
  const head = `runner gateway: ${where} presents a certificate issued by ${shown(e.issuer, 200) || 'an unnamed CA'} that this step does not trust (${reason || 'it does not verify'})`;
  const ca = company?.ca;
  const hostFile = company?.hostCa?.from ?? (ca?.by === 'host' ? ca.from : undefined);
  if (e.hostTrusts === true) {
    const from = hostFile ?? USUAL_BUNDLE;
    if (company?.caOff) return `${head}, and this machine does (${from}): a TLS-inspecting proxy on the way, likely. Its tools will refuse it: run without ${company.caOff} (steps then trust this machine's bundle), or with --ca-file ${from}`;
    if (ca && ca.by !== 'host') return `${head}, and this machine does (${from}): a TLS-inspecting proxy on the way, likely. The bundle given with ${ca.by ?? '--ca-file'} (${ca.from}) lacks its root: give --ca-file ${from}, or add that root to ${ca.from}`;
    return `${head}, and this machine does (${from}): its tools will refuse it; give --ca-file ${from}`;
  }
  if (!/SELF_SIGNED|UNABLE_TO_GET_ISSUER|UNABLE_TO_VERIFY_LEAF|CERT_UNTRUSTED/.test(reason)) {
    // not a question of which roots: an expired certificate, one for another name
    return `${head}: its tools will refuse it, and no CA bundle changes that`;
  }
  const trusted = ca ? `${ca.by === 'host' ? "this machine's bundle" : `the bundle given with ${ca.by ?? '--ca-file'}`} (${ca.from})` : `the images' own roots${company?.caOff ? ` (${company.caOff})` : ''}`;
  return `${head}, nor does ${trusted}: its tools will refuse it. Behind a TLS-inspecting proxy, give the proxy's root with this machine's: cat ${hostFile ?? USUAL_BUNDLE} proxy-root.pem > bundle.pem, then --ca-file bundle.pem`;
}
