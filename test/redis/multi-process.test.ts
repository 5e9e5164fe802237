// Exact limits across processes: several child processes, each with its own client and its own
// RedisStore (the built @portcullis/redis), hit one shared limit at the same instant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Child,
  clientKinds,
  decodeState,
  deletePrefix,
  ensureBuilt,
  forkFixture,
  ioredis,
  REDIS_PORT,
  type TestClient,
  uniquePrefix,
} from './helpers.js';

interface Summary {
  reasons: Record<string, number>;
  allowed: number;
  remaining: number[];
}

let client: TestClient;
const prefixes: string[] = [];

beforeAll(async () => {
  client = await ioredis.connect();
  ensureBuilt();
}, 120_000);

afterAll(async () => {
  for (const p of prefixes) await deletePrefix(client.sendCommand, p);
  await client?.close();
});

/** Starts `processes` hammers, waits until all are connected, then releases them together. */
async function hammer(
  mode: 'failures' | 'window',
  processes: number,
  perProcess: number,
  prefix: string,
): Promise<Summary[]> {
  const children: Child[] = Array.from({ length: processes }, (_, i) =>
    forkFixture('hammer.mjs', [
      mode,
      clientKinds[i % clientKinds.length]?.name ?? 'ioredis',
      String(REDIS_PORT),
      prefix,
      String(perProcess),
    ]),
  );
  try {
    await Promise.all(children.map((c) => c.next()));
    for (const c of children) c.process.send('go');
    return await Promise.all(children.map((c) => c.next<Summary>(30_000)));
  } finally {
    await Promise.all(children.map((c) => c.exited()));
  }
}

function total(summaries: Summary[], reason: string): number {
  return summaries.reduce((n, s) => n + (s.reasons[reason] ?? 0), 0);
}

describe('exact limits across processes (ioredis, node-redis and iovalkey at once)', () => {
  it('500 concurrent wrong credentials from 4 processes lock the subject after exactly maxAttempts failures', async () => {
    const prefix = uniquePrefix('mp-fail');
    prefixes.push(prefix);
    const summaries = await hammer('failures', 4, 125, prefix);
    // Failures 1–9 get the ordinary answer; the 10th starts the lockout; all later ones are refused.
    expect(summaries.reduce((n, s) => n + s.allowed, 0)).toBe(9);
    expect(total(summaries, 'allowed')).toBe(9);
    expect(total(summaries, 'locked')).toBe(491);
    expect(summaries.flatMap((s) => s.remaining).sort((a, b) => a - b)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
    // L expiresAt lockedUntil, no failure times: locked, history cleared.
    const state = decodeState(await client.getBuffer(`${prefix}auth:shared-secret:198.51.100.23`));
    expect(state?.kind).toBe('L');
    expect(state?.numbers).toHaveLength(2);
    expect(state?.numbers[0]).toBe(state?.numbers[1]);
    const ttl = Number(
      await client.sendCommand(['PTTL', `${prefix}auth:shared-secret:198.51.100.23`], undefined),
    );
    expect(ttl).toBeGreaterThan(290_000);
    expect(ttl).toBeLessThanOrEqual(300_000);
  });

  it('1000 concurrent consumes from 4 processes on a 100-slot window allow exactly 100', async () => {
    const prefix = uniquePrefix('mp-window');
    prefixes.push(prefix);
    const summaries = await hammer('window', 4, 250, prefix);
    expect(summaries.reduce((n, s) => n + s.allowed, 0)).toBe(100);
    expect(total(summaries, 'limited')).toBe(900);
    // Every slot was handed out exactly once.
    expect(summaries.flatMap((s) => s.remaining).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 100 }, (_, i) => i),
    );
    const state = decodeState(await client.getBuffer(`${prefix}slots:one-window`));
    expect(state?.kind).toBe('F');
    expect(state?.numbers[2]).toBe(100);
  });
});

describe('two HTTP server processes behind one Redis', () => {
  it('a lockout taken on one process refuses on the other, even with the right credential', async () => {
    const prefix = uniquePrefix('mp-http');
    prefixes.push(prefix);
    const servers = [
      forkFixture('auth-server.mjs', [String(REDIS_PORT), prefix]),
      forkFixture('auth-server.mjs', [String(REDIS_PORT), prefix]),
    ];
    try {
      const [a, b] = (await Promise.all(
        servers.map((s) => s.next<{ port: number; pid: number }>()),
      )) as [{ port: number; pid: number }, { port: number; pid: number }];
      expect(a.pid).not.toBe(b.pid);
      const call = (port: number, credential: string | undefined, ip = '203.0.113.9') =>
        fetch(`http://127.0.0.1:${port}/`, {
          headers: {
            'X-Forwarded-For': ip,
            ...(credential !== undefined && { Authorization: credential }),
          },
        });
      // Three wrong credentials on A: the third starts the lockout but still gets the plain 401.
      for (let i = 0; i < 3; i++) {
        const res = await call(a.port, 'Bearer wrong');
        expect(res.status).toBe(401);
        expect(res.headers.get('x-pid')).toBe(String(a.pid));
      }
      // B refuses the locked client, right credential or not.
      const refused = await call(b.port, 'Bearer right');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('x-pid')).toBe(String(b.pid));
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(299);
      expect(retryAfter).toBeLessThanOrEqual(300);
      const body = (await refused.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        code: 'INVALID_REQUEST',
        message: 'unauthorized: too many failed authentication attempts (retry later)',
        retryable: true,
        details: {
          code: 'AUTH_RATE_LIMITED',
          authReason: 'rate_limited',
          recommendedNextStep: 'wait_then_retry',
        },
      });
      expect(body['retryAfterMs']).toBeGreaterThan(299_000);
      expect((await call(a.port, 'Bearer right')).status).toBe(429);
      // Another client is unaffected on either process.
      expect((await call(b.port, 'Bearer right', '203.0.113.10')).status).toBe(200);
      expect((await call(a.port, 'Bearer wrong', '203.0.113.10')).status).toBe(401);
    } finally {
      for (const s of servers) s.process.send('stop');
      await Promise.all(servers.map((s) => s.exited()));
    }
  });
});
