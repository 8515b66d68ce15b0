/**
 * The gateway's HTTP front: a request for the gateway itself (origin-form, or
 * absolute-form naming runner-gateway) is a model call; any other absolute-form
 * request or CONNECT is the step's way out.
 */
import http from 'node:http';
import { GATEWAY_HOST, type GatewayConfig } from './config.js';
import { forwardHttp, tunnel, type Egress } from './egress.js';
import { inSubnet } from './address.js';
import type { ModelCalls } from './model-calls.js';

export function gatewayServer(c: GatewayConfig, calls: ModelCalls | undefined, egress: Egress): http.Server {
  const server = http.createServer((req, res) => {
    const target = req.url ?? '/';
    let url: URL | undefined;
    if (!target.startsWith('/')) {
      try {
        url = new URL(target);
      } catch {
        res.writeHead(400).end('runner gateway: not a URL\n');
        return;
      }
    }
    if (url === undefined || url.hostname === GATEWAY_HOST) {
      if (!calls) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('runner gateway: this step has no model API (it is not an agent preset)\n');
        req.resume();
        return;
      }
      calls.forward(req, res, url ? url.pathname + url.search : target);
      return;
    }
    forwardHttp(egress, req, res, url);
  });
  server.on('connect', (req, socket, head) => tunnel(egress, req, socket, head));
  // Binding to the step's address is not enough (a host routes packets for any of its addresses):
  // only the step's own network may talk to the gateway, or another container could borrow the key.
  server.on('connection', (socket) => {
    if (!inSubnet(c.listenSubnet, socket.remoteAddress)) socket.destroy();
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  // its file descriptors (4,096) and memory are bounded: so are the connections a step may hold open
  server.maxConnections = 1024;
  // a streamed answer may take minutes; a step is bounded by its own timeout
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  return server;
}
