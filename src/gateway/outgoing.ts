/**
 * The gateway's own requests (a model call to its API): with the CA bundle
 * the runner handed over added to Node's own, and through the company's
 * proxy when there is one (plain HTTP in absolute form, HTTPS by CONNECT).
 */
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { bypassesProxy, connectThrough, type UpstreamProxy } from './upstream-proxy.js';

export interface Outgoing {
  /** the roots a TLS upstream is checked against (Node's own and the runner's bundle); absent: Node's own */
  ca?: string[];
  proxy?: UpstreamProxy;
}

/** Node's own roots and a PEM bundle: the bundle adds to them, as NODE_EXTRA_CA_CERTS does in a step. */
export function withRoots(pem: string | undefined): string[] | undefined {
  return pem ? [...tls.rootCertificates, pem] : undefined;
}

export function outgoingRequest(url: URL, options: http.RequestOptions, o: Outgoing, onAnswer: (res: http.IncomingMessage) => void): http.ClientRequest {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const proxy = o.proxy && !bypassesProxy(o.proxy.noProxy, url.hostname, port) ? o.proxy : undefined;
  if (url.protocol === 'http:') {
    if (!proxy) return http.request(url, options, onAnswer);
    const headers = { ...options.headers, host: url.host, ...(proxy.authorization ? { 'proxy-authorization': proxy.authorization } : {}) };
    return http.request({ ...options, host: proxy.host, port: proxy.port, path: url.href, headers }, onAnswer);
  }
  const ca = o.ca ? { ca: o.ca } : {};
  if (!proxy) return https.request(url, { ...options, ...ca }, onAnswer);
  const servername = url.hostname.replace(/^\[|\]$/g, '');
  return https.request(
    url,
    {
      ...options,
      // no agent: the request makes its own connection, through the proxy (and says the usual port is 443, as an agent would)
      defaultPort: 443,
      createConnection: (_opts, done) => {
        connectThrough(proxy, servername, port).then(
          (socket) => done(null, tls.connect({ socket, servername, ALPNProtocols: ['http/1.1'], ...ca })),
          (err: Error) => done(err, undefined as never),
        );
        return undefined;
      },
    },
    onAnswer,
  );
}
