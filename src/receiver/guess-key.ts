import ipaddr from 'ipaddr.js';

/**
 * Whose guesses a dashboard login counts against: an IPv4 client by its address, an IPv6 one by
 * its /64. A single IPv6 host is routinely given a whole /64 (SLAAC, privacy addresses, a
 * hosting provider's allocation), so keyed by the full address one attacker had 2^64 budgets.
 * An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, what a dual-stack socket reports) is its IPv4.
 */
export function guessKey(address: string | undefined): string {
  if (address === undefined || !ipaddr.isValid(address)) return address ?? 'unknown';
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toNormalizedString()}/64`;
}
