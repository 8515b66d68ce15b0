/**
 * The first thing a client sends in a CONNECT tunnel, read before any byte of
 * it goes on: it must be a TLS ClientHello, and the names it asks for (SNI)
 * are what the gateway checks against the host the tunnel was opened for.
 * Reassembles a ClientHello spread over several TLS records; reads at most
 * MAX_HELLO bytes. Pure.
 */

export const MAX_HELLO = 64 * 1024;

const HANDSHAKE = 0x16;
const CLIENT_HELLO = 0x01;
const EXT_SERVER_NAME = 0x0000;
/** encrypted_client_hello: its real names are hidden from the gateway */
const EXT_ECH = 0xfe0d;

export type HelloRead =
  | { kind: 'more' }
  | { kind: 'refuse'; why: string }
  | { kind: 'hello'; names: string[]; ech: boolean };

/** What `bytes` (everything the client sent so far) says. */
export function readClientHello(bytes: Buffer): HelloRead {
  if (bytes.length === 0) return { kind: 'more' };
  if (bytes[0] !== HANDSHAKE) return { kind: 'refuse', why: 'not TLS: a tunnel carries TLS only' };
  // the handshake message, gathered from as many records as it spans
  const parts: Buffer[] = [];
  let have = 0;
  let at = 0;
  let need: number | undefined;
  while (need === undefined || have < need) {
    if (at + 5 > bytes.length) return bytes.length >= MAX_HELLO ? tooBig() : { kind: 'more' };
    if (bytes[at] !== HANDSHAKE) return { kind: 'refuse', why: 'not TLS: the ClientHello is cut by another record' };
    if (bytes[at + 1] !== 0x03) return { kind: 'refuse', why: 'not TLS: unknown record version' };
    const len = bytes.readUInt16BE(at + 3);
    if (len === 0 || len > 16384) return { kind: 'refuse', why: 'not TLS: a record of impossible length' };
    if (at + 5 + len > bytes.length) return at + 5 + len > MAX_HELLO ? tooBig() : { kind: 'more' };
    parts.push(bytes.subarray(at + 5, at + 5 + len));
    have += len;
    at += 5 + len;
    if (need === undefined && have >= 4) {
      const head = Buffer.concat(parts);
      if (head[0] !== CLIENT_HELLO) return { kind: 'refuse', why: 'not TLS: the first handshake message is not a ClientHello' };
      need = 4 + head.readUIntBE(1, 3);
      if (need > MAX_HELLO) return tooBig();
    }
  }
  return parseHello(Buffer.concat(parts).subarray(4, need));
}

function tooBig(): HelloRead {
  return { kind: 'refuse', why: `not TLS: a ClientHello longer than ${MAX_HELLO} bytes` };
}

function parseHello(b: Buffer): HelloRead {
  const bad: HelloRead = { kind: 'refuse', why: 'not TLS: a malformed ClientHello' };
  let p = 2 + 32; // version, random
  const skip = (lenBytes: 1 | 2): boolean => {
    if (p + lenBytes > b.length) return false;
    const n = lenBytes === 1 ? b[p]! : b.readUInt16BE(p);
    p += lenBytes + n;
    return p <= b.length;
  };
  if (!skip(1) || !skip(2) || !skip(1)) return bad; // session id, cipher suites, compression
  const names: string[] = [];
  let ech = false;
  if (p === b.length) return { kind: 'hello', names, ech }; // no extensions at all
  if (p + 2 > b.length) return bad;
  const end = p + 2 + b.readUInt16BE(p);
  if (end !== b.length) return bad;
  p += 2;
  while (p < end) {
    if (p + 4 > end) return bad;
    const type = b.readUInt16BE(p);
    const len = b.readUInt16BE(p + 2);
    const body = b.subarray(p + 4, p + 4 + len);
    if (p + 4 + len > end) return bad;
    p += 4 + len;
    if (type === EXT_ECH) ech = true;
    if (type !== EXT_SERVER_NAME) continue;
    if (body.length < 2 || body.readUInt16BE(0) !== body.length - 2) return bad;
    for (let q = 2; q < body.length; ) {
      if (q + 3 > body.length) return bad;
      const nameType = body[q]!;
      const n = body.readUInt16BE(q + 1);
      if (q + 3 + n > body.length) return bad;
      if (nameType === 0) names.push(body.subarray(q + 3, q + 3 + n).toString('latin1'));
      q += 3 + n;
    }
  }
  return { kind: 'hello', names, ech };
}

/** Why this ClientHello may not go to `host`, or undefined when it may. */
export function helloProblem(hello: { names: string[]; ech: boolean }, host: string): string | undefined {
  const want = host.toLowerCase().replace(/\.$/, '');
  if (hello.ech) return 'an encrypted ClientHello (ECH) hides the site it asks for';
  if (hello.names.length === 0) return 'a ClientHello without a server name (SNI)';
  for (const n of hello.names) {
    if (n.toLowerCase().replace(/\.$/, '') !== want) return `a ClientHello for ${visibleName(n)}, in a tunnel opened for ${want}`;
  }
  return undefined;
}

function visibleName(n: string): string {
  return n.slice(0, 100).replace(/[^\x21-\x7e]/g, '?');
}
