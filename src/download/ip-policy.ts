import ipaddr from 'ipaddr.js';
import { BlockList, isIP } from 'node:net';

/**
 * Which addresses a download may reach unless DOWNLOAD_ALLOW_PRIVATE_IPS=true: public unicast
 * only. The SSRF targets are cloud metadata (169.254.169.254), the service's own Redis, and
 * anything on the private network, in whatever form an address can take.
 *
 * ipaddr.js names every special-purpose range of the IANA IPv4 and IPv6 registries (private,
 * loopback, link-local, CGNAT, documentation, benchmarking, 6to4, Teredo, ORCHID, AS112, AMT,
 * discard-only, reserved, broadcast…); only its `unicast` is public. On top of it, a short list:
 */
const NOT_PUBLIC_V6 = new BlockList();
// IPv4-compatible addresses (`::7f00:1`, `::127.0.0.1`, deprecated): ipaddr.js calls the hex form
// unicast and parses the dotted form as IPv4-mapped, so Node's own parser decides these.
NOT_PUBLIC_V6.addSubnet('::', 96, 'ipv6');
// Local-use NAT64 (RFC 8215): translated inside the operator's own network.
NOT_PUBLIC_V6.addSubnet('64:ff9b:1::', 48, 'ipv6');

/** Only 2000::/3 is allocated as global unicast; ipaddr.js calls the unallocated rest unicast too. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
/** The well-known NAT64 prefix (RFC 6052): reaches the IPv4 address in its last 32 bits. */
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');

function isPublicV4(address: ipaddr.IPv4): boolean {
  return address.range() === 'unicast';
}

/** True for a public unicast address; false for anything private, special or not an IP. */
export function isPublicAddress(raw: string): boolean {
  const address = raw.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  // net.isIP is strict (ipaddr.js would also take `127.1` and `0x7f.1`, which no socket gets).
  const family = isIP(address);
  if (family === 4) return isPublicV4(ipaddr.IPv4.parse(address));
  if (family !== 6 || NOT_PUBLIC_V6.check(address, 'ipv6')) return false;
  const v6 = ipaddr.IPv6.parse(address);
  // The mapped (`::ffff:a.b.c.d`) and NAT64 forms reach an IPv4 address: judge that one.
  if (v6.isIPv4MappedAddress()) return isPublicV4(v6.toIPv4Address());
  if (v6.match(NAT64)) return isPublicV4(new ipaddr.IPv4(v6.toByteArray().slice(12)));
  return v6.match(GLOBAL_UNICAST) && v6.range() === 'unicast';
}
