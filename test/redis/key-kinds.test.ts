// A request limiter and an auth guard sharing one store and one name: the request limiter's key
// is the client's to choose (a header here), so it can name the auth guard's key. Whatever it
// names, one kind's operation never deletes the other kind's state: in memory and on Redis, with
// the process's local deny table and without.
import { MemoryStore, type RawRequest, type Store } from '@portcullis/core';
import {
  createAuthGate,
  createRequestGate,
  type GateResult,
  type RequestResult,
} from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../packages/redis/src/index.js';
import { deletePrefix, ioredis, type TestClient, uniquePrefix } from './helpers.js';

interface Req {
  headers: Record<string, string>;
}

const raw = (ip: string, headers: Record<string, string> = {}): RawRequest => ({
  socket: { remoteAddress: ip },
  headers,
});

const T0 = 1_700_000_000_000;

describe('a request-chosen key cannot erase a lockout of a guard that shares store and name', () => {
  let client: TestClient;
  const prefixes: string[] = [];
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(async () => {
    for (const prefix of prefixes) await deletePrefix(client.sendCommand, prefix);
    await client?.close();
  });

  const stores: [string, (clock: ReturnType<typeof manualClock>) => Store][] = [
    ['MemoryStore', (clock) => new MemoryStore({ clock, timers: clock })],
    [
      'RedisStore',
      (clock) => {
        const prefix = uniquePrefix('kinds');
        prefixes.push(prefix);
        return new RedisStore({
          sendCommand: client.sendCommand,
          prefix,
          clock,
          onError: 'closed',
        });
      },
    ],
    [
      'RedisStore without localDeny',
      (clock) => {
        const prefix = uniquePrefix('kinds');
        prefixes.push(prefix);
        return new RedisStore({
          sendCommand: client.sendCommand,
          prefix,
          clock,
          onError: 'closed',
          localDeny: false,
        });
      },
    ],
  ];

  it.each(stores)(
    '%s: peek and consume of the guard key refuse, the lockout stands',
    async (_, make) => {
      const clock = manualClock(T0);
      const store = make(clock);
      const warnings: string[] = [];
      const logger = {
        warn: (_o: object, msg?: string) => warnings.push(msg ?? ''),
        error: () => {},
      };
      const auth = createAuthGate<Req>({
        verify: (r) => (r.headers.authorization === 'right' ? 'ok' : 'invalid'),
        name: 'login',
        maxAttempts: 3,
        store,
        logger,
      });
      const limit = createRequestGate<Req>({
        name: 'login',
        limit: 100,
        store,
        key: (r) => r.headers['x-api-key'] ?? 'anonymous',
        logger,
      });
      const attacker = '203.0.113.9';
      const guess = async (authorization: string): Promise<GateResult> =>
        await auth.run(raw(attacker), { headers: { authorization } });
      for (let i = 0; i < 3; i++) await guess('wrong');
      const locked = await guess('right');
      expect(locked.ok).toBe(false);
      expect(locked.ok ? 0 : locked.answer.status).toBe(429);

      // The guard's key in the shared store is `login:default:<ip>`; the request limiter's keys are
      // `login:<key>`. The attacker names the guard's key as its API key.
      const chosen = { headers: { 'x-api-key': `default:${attacker}` } };
      const peeked = await limit.limiter.peek(`default:${attacker}`);
      expect(peeked).toMatchObject({ allowed: false, reason: 'limited', remaining: 0 });
      const spent = (await limit.run(raw(attacker, chosen.headers), chosen)) as RequestResult;
      expect(spent.ok).toBe(false);
      expect(spent.decision).toMatchObject({
        allowed: false,
        reason: 'limited',
        remaining: 0,
        retryAfterMs: 300_000,
      });

      // The lockout is whole: the right password is still refused, for the same 300 s.
      const after = await guess('right');
      expect(after.ok).toBe(false);
      expect(after.ok ? undefined : after.answer.headers['Retry-After']).toBe('300');
      clock.advance(300_000);
      expect((await guess('right')).ok).toBe(true);
      expect(warnings.some((w) => w.includes('two limiters named "login"'))).toBe(true);
      await store.close();
    },
  );
});
