/**
 * Is an IP address on the public internet? A webhook target must be (contract §8): never a
 * private, loopback, link-local, unique-local, shared (CGNAT), documentation, multicast or
 * reserved address, nor the cloud metadata service (169.254.169.254, fd00:ec2::254), also when
 * spelled as IPv6 around an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible, NAT64
 * `64:ff9b::/96`, 6to4 `2002::/16`).
 */
import { isIP } from "node:net";

type Cidr = [prefix: number[], bits: number];

const PRIVATE_V4: Cidr[] = [
  [[0], 8], // "this network"
  [[10], 8],
  [[100, 64], 10], // shared address space (CGNAT)
  [[127], 8],
  [[169, 254], 16], // link-local, the metadata service
  [[172, 16], 12],
  [[192, 0, 0], 24], // IETF protocol assignments
  [[192, 0, 2], 24], // TEST-NET-1
  [[192, 88, 99], 24], // 6to4 relay anycast
  [[192, 168], 16],
  [[198, 18], 15], // benchmarking
  [[198, 51, 100], 24], // TEST-NET-2
  [[203, 0, 113], 24], // TEST-NET-3
  [[224], 4], // multicast
  [[240], 4], // reserved, broadcast
];

const PRIVATE_V6: Cidr[] = [
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 96], // unspecified, loopback, IPv4-compatible
  [[0x01, 0x00], 64], // discard-only
  [[0x20, 0x01, 0x0d, 0xb8], 32], // documentation
  [[0x20, 0x01, 0x00, 0x00], 23], // IETF protocol assignments (Teredo among them)
  [[0xfc], 7], // unique local (fd00:ec2::254, the metadata service, among them)
  [[0xfe, 0x80], 10], // link-local
  [[0xfe, 0xc0], 10], // site-local (deprecated)
  [[0xff], 8], // multicast
];

export function isPublicAddress(address: string): boolean {
  const version = isIP(address);
  if (version === 4) return !inAny(parseV4(address), PRIVATE_V4);
  if (version !== 6) return false;
  const bytes = parseV6(address);
  const embedded = embeddedV4(bytes);
  if (embedded) return !inAny(embedded, PRIVATE_V4);
  return !inAny(bytes, PRIVATE_V6);
}

/** The IPv4 address an IPv6 address carries, in the forms that route to it. */
function embeddedV4(bytes: number[]): number[] | undefined {
  const startsWith = (prefix: number[]) => prefix.every((b, i) => bytes[i] === b);
  // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible; ::, ::1 are caught by the v6 list).
  if (startsWith([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff])) return bytes.slice(12);
  // 64:ff9b::/96, NAT64's well-known prefix.
  if (startsWith([0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0])) return bytes.slice(12);
  // 2002:a.b.c.d::/48, 6to4.
  if (startsWith([0x20, 0x02])) return bytes.slice(2, 6);
  return undefined;
}

function inAny(bytes: number[], ranges: Cidr[]): boolean {
  return ranges.some(([prefix, bits]) => {
    for (let bit = 0; bit < bits; bit++) {
      const byte = Math.floor(bit / 8);
      const mask = 0x80 >> (bit % 8);
      if (((bytes[byte] ?? 0) & mask) !== ((prefix[byte] ?? 0) & mask)) return false;
    }
    return true;
  });
}

function parseV4(address: string): number[] {
  return address.split(".").map(Number);
}

/** 16 bytes of a valid IPv6 address (node:net said so), `::` and a dotted tail included. */
function parseV6(address: string): number[] {
  let text = address.replace(/%.*$/, "").toLowerCase(); // a zone id says nothing of the range
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = parseV4(dotted[1]!) as [number, number, number, number];
    text = text.slice(0, -dotted[1]!.length) +
      `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const groups = (part: string | undefined) =>
    part ? part.split(":").map((g) => parseInt(g, 16)) : [];
  const front = groups(head);
  const back = groups(tail);
  const words = tail === undefined
    ? front
    : [...front, ...new Array(8 - front.length - back.length).fill(0), ...back];
  return words.flatMap((word) => [word >> 8, word & 0xff]);
}
