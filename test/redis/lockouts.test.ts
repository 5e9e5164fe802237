// The operator's view of a shared store: lockouts() lists what is locked out and why from the
// lockout index the scripts keep (never SCAN or KEYS), ban() locks out by hand, and reset() is the
// unlock that reaches every process's local deny table through subscribe.
import { createFailureLimiter } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore, type SendCommand } from '../../packages/redis/src/index.js';
import {
  delivered,
  deletePrefix,
  ioredis,
  subscriber,
  type TestClient,
  uniquePrefix,
} from './helpers.js';

const T0 = 1_700_000_000_000;

describe('lockouts, ban and unlock on Redis', () => {
  let client: TestClient;
  const prefixes: string[] = [];
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(async () => {
    for (const prefix of prefixes) await deletePrefix(client.sendCommand, prefix);
    await client?.close();
  });

  it('lists earned lockouts and bans by scope, soonest end first, without SCAN or KEYS', async () => {
    const prefix = uniquePrefix('lockouts');
    prefixes.push(prefix);
    const clock = manualClock(T0);
    const sent: string[] = [];
    const send: SendCommand = (args, key) => {
      sent.push(args[0] as string);
      return client.sendCommand(args, key);
    };
    const store = new RedisStore({ sendCommand: send, prefix, clock });
    const auth = createFailureLimiter({ maxAttempts: 2, store, name: 'gw' });
    for (let i = 0; i < 2; i++) await auth.recordFailure('203.0.113.1', 'shared-secret');
    clock.advance(1000);
    for (let i = 0; i < 2; i++) await auth.recordFailure('2001:db8::1', 'device-token');
    expect(await auth.ban('198.51.100.7', { ms: 3_600_000 })).toMatchObject({
      allowed: false,
      reason: 'locked',
      retryAfterMs: 3_600_000,
    });
    sent.length = 0;
    expect(await auth.lockouts()).toEqual([
      {
        scope: 'shared-secret',
        key: '203.0.113.1',
        layer: 'client',
        until: T0 + 300_000,
        retryAfterMs: 299_000,
      },
      {
        scope: 'device-token',
        key: '2001:db8::/64',
        layer: 'client',
        until: T0 + 301_000,
        retryAfterMs: 300_000,
      },
      {
        scope: 'default',
        key: '198.51.100.7',
        layer: 'ban',
        until: T0 + 3_601_000,
        retryAfterMs: 3_600_000,
      },
    ]);
    expect(sent).not.toContain('SCAN');
    expect(sent).not.toContain('KEYS');
    expect(await auth.lockouts({ scope: 'device-token' })).toHaveLength(1);
    // A ban answers like any lockout: the right credential is refused too.
    expect(await auth.recordSuccess('198.51.100.7')).toMatchObject({ reason: 'locked' });
    // reset is the unlock: gone from the list, and the client may try again.
    await auth.reset('198.51.100.7');
    expect((await auth.lockouts()).map((l) => l.key)).toEqual(['203.0.113.1', '2001:db8::/64']);
    expect(await auth.check('198.51.100.7')).toMatchObject({ allowed: true, remaining: 2 });
    store.close();
  });

  it('an unlock in one process reaches the other process within the message, deny table and all', async () => {
    const prefix = uniquePrefix('lockouts');
    prefixes.push(prefix);
    const clock = manualClock(T0);
    const mine = await subscriber();
    const theirs = await subscriber();
    const operator = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      subscribe: mine.subscribe,
    });
    const gateway = new RedisStore({
      sendCommand: client.sendCommand,
      prefix,
      clock,
      subscribe: theirs.subscribe,
    });
    await mine.ready();
    await theirs.ready();
    const here = createFailureLimiter({ store: gateway });
    const admin = createFailureLimiter({ store: operator });
    for (let i = 0; i < 10; i++) await here.recordFailure('203.0.113.20');
    // The gateway answers the locked client from its own memory now, without Redis.
    expect(await here.check('203.0.113.20')).toMatchObject({ reason: 'locked' });
    const answered = gateway.localDeny === false ? 0 : gateway.localDeny.answered;
    expect(await here.check('203.0.113.20')).toMatchObject({ reason: 'locked' });
    expect(gateway.localDeny === false ? 0 : gateway.localDeny.answered).toBe(answered + 1);
    expect((await admin.lockouts()).map((l) => l.key)).toEqual(['203.0.113.20']);
    await admin.reset('203.0.113.20');
    await delivered(theirs);
    expect(await here.check('203.0.113.20')).toMatchObject({ allowed: true, remaining: 10 });
    expect(await admin.lockouts()).toEqual([]);
    operator.close();
    gateway.close();
  });
});
