import { isPublicAddress } from '../../src/download/ip-policy';

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    '::1',
    '::',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '64:ff9b::10.0.0.1',
    // The forms the first version judged public (IANA special-purpose registries):
    '::7f00:1', // IPv4-compatible loopback
    '::127.0.0.1',
    '::8.8.8.8', // IPv4-compatible, deprecated: never a real destination
    '::a9fe:a9fe',
    '2002:7f00:1::', // 6to4 of 127.0.0.1
    '2002:808:808::1', // 6to4 of a public address: a relay, not a CDN
    '2001::1', // Teredo
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '64:ff9b:1::1', // local-use NAT64
    '64:ff9b:1::8.8.8.8',
    '100::1', // discard-only
    '2001:db8::1', // documentation
    '3fff::1', // documentation (2024)
    '2001:2::1', // benchmarking
    '2001:20::1', // ORCHIDv2
    '5f00::1', // segment routing
    'fec0::1', // site-local
    '4000::1', // outside 2000::/3: unallocated
    '192.88.99.1', // 6to4 relay anycast
    '198.19.255.255', // benchmarking, second half
    '240.0.0.1', // reserved
    '192.0.0.9',
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.5',
    '192.31.196.1', // AS112
    '127.1', // shorthand forms no socket API accepts
    '0x7f.1',
    '[::1]',
    'fe80::1%eth0',
    'localhost',
    'not-an-ip',
    '',
  ])('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8', // well-known NAT64 of a public address
    '2a00:1450:4001:80b::200e',
    '[2001:4860::8888]',
  ])('allows %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});
