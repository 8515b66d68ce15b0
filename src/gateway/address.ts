/** Which of this container's addresses is on a given network. Pure but for its default argument. */
import os from 'node:os';

const toInt = (ip: string) => ip.split('.').reduce((n, o) => (n << 8) + Number(o), 0) >>> 0;

/** Whether an IPv4 address (or an IPv4-mapped IPv6 one, as sockets report it) is inside `cidr`. */
export function inSubnet(cidr: string, address: string | undefined): boolean {
  const ip = address?.replace(/^::ffff:/i, '');
  if (!ip || !/^\d+\.\d+\.\d+\.\d+$/.test(ip)) return false;
  const [base, bits] = cidr.split('/') as [string, string];
  const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
  return ((toInt(ip) & mask) >>> 0) === ((toInt(base) & mask) >>> 0);
}

/** This container's IPv4 address inside `cidr`. */
export function addressIn(cidr: string, interfaces = os.networkInterfaces()): string | undefined {
  for (const list of Object.values(interfaces)) {
    for (const a of list ?? []) if (a.family === 'IPv4' && inSubnet(cidr, a.address)) return a.address;
  }
  return undefined;
}
