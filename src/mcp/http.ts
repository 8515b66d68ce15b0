/**
 * runner serve's /mcp: the same tools over the SDK's streamable HTTP
 * transport, stateless: each request gets a server and a transport of its
 * own, made for it and dropped when its answer is done, so the server keeps
 * no sessions to bound or expire. Who may call it is decided before this
 * (access.ts: the token, or the session cookie, as for the rest of the API).
 */
import type http from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpBackend } from './backend.js';
import { createMcpServer } from './server.js';

export async function handleMcp(req: http.IncomingMessage, res: http.ServerResponse, backend: McpBackend, version: string): Promise<void> {
  const server = createMcpServer(backend, version);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.once('close', () => {
    void transport.close().catch(() => undefined);
    void server.close().catch(() => undefined);
  });
  await server.connect(transport);
  await transport.handleRequest(req, res);
}
