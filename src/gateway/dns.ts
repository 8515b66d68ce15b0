/**
 * A name server that knows no names: every query gets NXDOMAIN at once. A
 * step behind the gateway has it as its resolver, so no name leaks out by DNS
 * and a lookup fails fast (an internal network's own resolver would try the
 * host's name servers and time out after 10 to 20 seconds). Names of the
 * step's network (runner-gateway) are the engine's, answered before it.
 */
import dgram from 'node:dgram';
import { inSubnet } from './address.js';

/** The NXDOMAIN answer to a DNS query, or undefined when the packet is not a query. */
export function nxdomain(query: Buffer): Buffer | undefined {
  if (query.length < 12) return undefined;
  const flags = query.readUInt16BE(2);
  if (flags & 0x8000) return undefined; // an answer, not a query
  // the question section as asked: header counts say one question, nothing else
  const qdcount = query.readUInt16BE(4);
  let end = 12;
  for (let q = 0; q < qdcount && q < 1; q++) {
    while (end < query.length && query[end] !== 0) {
      const len = query[end]!;
      if (len & 0xc0) return undefined; // no compression in a question
      end += len + 1;
    }
    end += 5; // the root label, QTYPE and QCLASS
  }
  if (end > query.length) return undefined;
  const out = Buffer.from(query.subarray(0, end));
  const opcode = flags & 0x7800;
  const rd = flags & 0x0100;
  out.writeUInt16BE(0x8000 | opcode | rd | 0x0080 | 3, 2); // QR, RA, RCODE 3
  out.writeUInt16BE(Math.min(qdcount, 1), 4);
  out.writeUInt16BE(0, 6);
  out.writeUInt16BE(0, 8);
  out.writeUInt16BE(0, 10);
  return out;
}

export function startDns(address: string, port: number, subnet: string, onError: (message: string) => void): Promise<dgram.Socket> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, from) => {
    if (!inSubnet(subnet, from.address)) return;
    const answer = nxdomain(msg);
    if (answer) socket.send(answer, from.port, from.address);
  });
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, address, () => {
      socket.off('error', reject);
      socket.on('error', (err) => onError(`dns: ${err.message}`));
      resolve(socket);
    });
  });
}
