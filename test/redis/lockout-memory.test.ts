// Lockouts survive a Redis that comes back empty: a private redis-server is killed and restarted
// without data, under each onError policy. A lockout this process saw keeps refusing until it ends
// (during the outage and after it), and a lockout the fallback started during the outage is
// written back, so another process sees it too.
import { createFailureLimiter, type Decision } from '@portcullis/core';
import { afterEach, describe, expect, it } from 'vitest';
import { type OnError, RedisStore } from '../../packages/redis/src/index.js';
import { ioredis, type RedisServer, startRedisServer, type TestClient } from './helpers.js';

/** Polls `fn` every 20 ms until it returns true; fails after `ms`. */
async function eventually(fn: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms}ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const LOCKOUT_MS = 300_000;
/** A lockout this old or younger still has about five minutes left (real time passes). */
const ABOUT_FIVE_MINUTES = LOCKOUT_MS - 30_000;

describe.each<OnError>(['fallback', 'open', 'closed'])(
  "Redis restarted empty under onError '%s'",
  (onError) => {
    let server: RedisServer | undefined;
    const clients: TestClient[] = [];

    afterEach(async () => {
      for (const c of clients.splice(0)) await c.close();
      await server?.stop();
      server = undefined;
    });

    // With the local deny table (the default), the lockout is answered by the process itself, so a
    // refusal made before the outage is noticed says 'locked' (the table holds it for maxStaleMs,
    // here the whole lockout); without it, the first call meets the dead Redis: 'fallback'.
    it.each([
      ['local deny table off', false, 'fallback'],
      ['local deny table on', { maxStaleMs: LOCKOUT_MS }, 'locked'],
    ] as const)(
      '%s: a lockout seen before the restart keeps refusing; one the fallback started is written back',
      async (_, localDeny, duringOutage) => {
        server = await startRedisServer();
        const client = await ioredis.connect(server.port, { reconnect: true });
        clients.push(client);
        const store = new RedisStore({
          sendCommand: client.sendCommand,
          onError,
          timeoutMs: 300,
          probeIntervalMs: 100,
          localDeny,
        });
        const auth = createFailureLimiter({ store, maxAttempts: 3, lockoutMs: LOCKOUT_MS });
        const locked = (d: Decision, reason: Decision['reason']) => {
          expect(d).toMatchObject({ allowed: false, reason, remaining: 0 });
          expect(d.retryAfterMs).toBeGreaterThan(ABOUT_FIVE_MINUTES);
          expect(d.retryAfterMs).toBeLessThanOrEqual(LOCKOUT_MS);
        };
        try {
          for (let i = 0; i < 3; i++) await auth.recordFailure('192.0.2.1');
          locked(await auth.check('192.0.2.1'), 'locked');

          await server.kill();
          locked(await auth.check('192.0.2.1'), duringOutage);
          if (onError === 'fallback') {
            for (let i = 0; i < 3; i++) await auth.recordFailure('192.0.2.2');
            locked(await auth.check('192.0.2.2'), 'fallback');
          }

          await server.restart();
          await eventually(
            async () => (await auth.check('198.51.100.1')).reason === 'allowed',
            5000,
            'Redis deciding again after the restart',
          );
          // Redis has no trace of it, and still the lockout refuses, a success included.
          locked(await auth.check('192.0.2.1'), 'locked');
          locked(await auth.recordSuccess('192.0.2.1'), 'locked');
          locked(await auth.recordFailure('192.0.2.1'), 'locked');

          if (onError === 'fallback') {
            // Another process, which never saw the outage, sees the lockout written back.
            const otherClient = await ioredis.connect(server.port);
            clients.push(otherClient);
            const other = createFailureLimiter({
              store: new RedisStore({ sendCommand: otherClient.sendCommand, onError: 'closed' }),
              maxAttempts: 3,
              lockoutMs: LOCKOUT_MS,
            });
            await eventually(
              async () => (await other.check('192.0.2.2')).reason === 'locked',
              5000,
              'the lockout started during the outage written back to Redis',
            );
            locked(await other.check('192.0.2.2'), 'locked');
            locked(await auth.check('192.0.2.2'), 'locked');
            // The lockout seen before the restart was not this process's to write back.
            expect(await other.check('192.0.2.1')).toMatchObject({ allowed: true, remaining: 3 });
          }
        } finally {
          store.close();
        }
      },
    );
  },
);
