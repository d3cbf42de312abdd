import { guessKey } from '../../src/receiver/guess-key';

describe('guessKey: whose budget a dashboard login counts against', () => {
  it('an IPv6 client by its /64: every address of one allocation shares one budget', () => {
    const keys = [
      '2001:db8:1:2::1',
      '2001:db8:1:2:ffff:ffff:ffff:ffff',
      '2001:DB8:1:2:a:b:c:d',
    ].map(guessKey);
    expect(new Set(keys)).toEqual(new Set(['2001:db8:1:2:0:0:0:0/64']));
    expect(guessKey('2001:db8:1:3::1')).not.toBe(keys[0]);
  });

  it('an IPv4 client by its address, also when a dual-stack socket reports it mapped', () => {
    expect(guessKey('203.0.113.7')).toBe('203.0.113.7');
    expect(guessKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(guessKey('203.0.113.8')).not.toBe(guessKey('203.0.113.7'));
  });

  it('what is not an address is kept as it is', () => {
    expect(guessKey(undefined)).toBe('unknown');
    expect(guessKey('not-an-ip')).toBe('not-an-ip');
  });
});
