import { describe, expect, it } from 'vitest';
import { parseRedisUrl } from './redis-url.js';

describe('parseRedisUrl', () => {
  it('reads host, port, user, password, database and TLS, and shows the URL without its password', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379')).toEqual({
      host: '127.0.0.1',
      port: 6379,
      db: 0,
      tls: false,
      shown: 'redis://127.0.0.1:6379',
    });
    expect(parseRedisUrl('rediss://ops:p%40ss@cache.example:6380/2')).toEqual({
      host: 'cache.example',
      port: 6380,
      username: 'ops',
      password: 'p@ss',
      db: 2,
      tls: true,
      shown: 'rediss://ops:***@cache.example:6380/2',
    });
    expect(parseRedisUrl('redis://:secret@[::1]')).toEqual({
      host: '::1',
      port: 6379,
      password: 'secret',
      db: 0,
      tls: false,
      shown: 'redis://:***@[::1]:6379',
    });
    expect(parseRedisUrl('redis://ops@10.0.0.5').shown).toBe('redis://ops@10.0.0.5:6379');
  });

  it.each([
    ['not a url', '--redis must be a URL such as redis://127.0.0.1:6379'],
    ['http://user:secret@host', '--redis must start with redis:// or rediss:// (TLS)'],
    ['redis://user:secret@host/x', '--redis: the path is a database number (/0)'],
    [
      'redis://user:secret@host?password=x',
      '--redis takes no query or fragment: user, password, host, port and /db only',
    ],
    ['redis://user:%zz@host', '--redis: the password has a broken %-escape'],
  ])('refuses %s without repeating it', (text, message) => {
    expect(() => parseRedisUrl(text)).toThrow(new Error(message));
  });
});
