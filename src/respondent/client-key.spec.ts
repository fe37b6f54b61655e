import { clientOf } from './client-key';

describe('clientOf (the client a per-IP bound counts)', () => {
  it('keeps an IPv4 address and folds an IPv4-mapped IPv6 one to it', () => {
    expect(clientOf('203.0.113.7')).toBe('203.0.113.7');
    expect(clientOf('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts an IPv6 address by its /64, so rotating within it stays one client', () => {
    expect(clientOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientOf('2001:db8:1:2:ffff:ffff:ffff:fffe')).toBe('2001:db8:1:2::/64');
    expect(clientOf('2001:db8:1:3::1')).not.toBe(clientOf('2001:db8:1:2::1'));
  });

  it('keeps what is not an address as it is', () => {
    expect(clientOf(undefined)).toBe('unknown');
    expect(clientOf('not-an-ip')).toBe('not-an-ip');
  });
});
