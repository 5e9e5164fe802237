import { describe, expect, it } from 'vitest';
import { contextIdentity, methodQuotaKey, UNKNOWN_DEVICE, UNKNOWN_IP } from './identity.js';

describe('methodQuotaKey', () => {
  it.each<[string, Parameters<typeof methodQuotaKey>[1], string]>([
    ['full identity', { deviceId: 'dev-1', clientIp: '203.0.113.7' }, 'm.x|dev-1|203.0.113.7'],
    ['IPv4-mapped IPv6', { deviceId: 'd', clientIp: '::ffff:203.0.113.7' }, 'm.x|d|203.0.113.7'],
    [
      'upper-case IPv6, keyed by its /64',
      { deviceId: 'd', clientIp: '2001:DB8::0:1' },
      'm.x|d|2001:db8::/64',
    ],
    [
      'IPv6 inside one /64',
      { deviceId: 'd', clientIp: '2001:db8:1:2:ffff:ffff:ffff:fffe' },
      'm.x|d|2001:db8:1:2::/64',
    ],
    ['short IPv4 is garbage', { deviceId: 'd', clientIp: '127.1' }, 'm.x|d|unknown-ip'],
    ['IP with a port is garbage', { deviceId: 'd', clientIp: '1.2.3.4:80' }, 'm.x|d|unknown-ip'],
    ['device trimmed', { deviceId: '  d  ', clientIp: '10.0.0.1' }, 'm.x|d|10.0.0.1'],
    [
      'connection ignored when the device is known',
      { deviceId: 'd', connId: 'c' },
      'm.x|d|unknown-ip',
    ],
    [
      'connection ignored when the IP is known',
      { clientIp: '10.0.0.1', connId: 'c' },
      'm.x|unknown-device|10.0.0.1',
    ],
    ['numeric connection id', { connId: 42 }, 'm.x|unknown-device|unknown-ip|conn=42'],
    ['blank connection id', { connId: ' ' }, 'm.x|unknown-device|unknown-ip'],
    ['no identity', undefined, 'm.x|unknown-device|unknown-ip'],
    ['null identity', null, 'm.x|unknown-device|unknown-ip'],
  ])('%s', (_label, identity, key) => {
    expect(methodQuotaKey('m.x', identity)).toBe(key);
  });

  it('escapes the separator so distinct identities never share a key', () => {
    const a = methodQuotaKey('worktrees.x|dev', { deviceId: 'A', clientIp: '10.0.0.1' });
    const b = methodQuotaKey('worktrees.x', { deviceId: 'dev|A', clientIp: '10.0.0.1' });
    expect(a).toBe('worktrees.x%7Cdev|A|10.0.0.1');
    expect(b).toBe('worktrees.x|dev%7CA|10.0.0.1');
    expect(methodQuotaKey('m', { deviceId: '%7C' })).toBe('m|%257C|unknown-ip');
    expect(methodQuotaKey('m', { connId: 'x|y' })).toBe('m|unknown-device|unknown-ip|conn=x%7Cy');
  });

  it('keys IPv6 by the subnet asked for; false keeps the full address; IPv4 is never cut', () => {
    const ip = { deviceId: 'd', clientIp: '2001:db8:1:2:aaaa:bbbb:cccc:dddd' };
    expect(methodQuotaKey('m', ip)).toBe('m|d|2001:db8:1:2::/64');
    expect(methodQuotaKey('m', ip, 64)).toBe('m|d|2001:db8:1:2::/64');
    expect(methodQuotaKey('m', ip, 48)).toBe('m|d|2001:db8:1::/48');
    expect(methodQuotaKey('m', ip, 128)).toBe('m|d|2001:db8:1:2:aaaa:bbbb:cccc:dddd');
    expect(methodQuotaKey('m', ip, false)).toBe('m|d|2001:db8:1:2:aaaa:bbbb:cccc:dddd');
    expect(methodQuotaKey('m', { deviceId: 'd', clientIp: '203.0.113.7' }, 8)).toBe(
      'm|d|203.0.113.7',
    );
    expect(() => methodQuotaKey('m', ip, 0)).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_IPV6_SUBNET' }),
    );
  });

  it('exports the fallback names', () => {
    expect([UNKNOWN_DEVICE, UNKNOWN_IP]).toEqual(['unknown-device', 'unknown-ip']);
  });

  it('the default identity reads the context fields and ignores non-objects', () => {
    expect(contextIdentity({ deviceId: 'd', clientIp: '10.0.0.1', connId: 'c', other: 1 })).toEqual(
      {
        deviceId: 'd',
        clientIp: '10.0.0.1',
        connId: 'c',
      },
    );
    expect(contextIdentity(undefined)).toBeUndefined();
    expect(contextIdentity('d')).toBeUndefined();
  });
});
