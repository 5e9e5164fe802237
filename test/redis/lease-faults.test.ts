// Concurrency leases on a Redis that dies and comes back (a private redis-server of its own): the
// fallback holds this process's leases during the outage, a lease taken before the fault is given
// back when Redis returns, and the heartbeat of a lease taken during the outage carries it over.
import { createConcurrencyLimiter } from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ensureBuilt,
  ioredis,
  type RedisServer,
  startRedisServer,
  type TestClient,
} from './helpers.js';

const quiet = { warn() {}, error() {} };

describe('concurrency leases on a Redis that fails', () => {
  let server: RedisServer | undefined;
  let client: TestClient | undefined;

  afterEach(async () => {
    server?.resume();
    await client?.close();
    await server?.stop();
    server = undefined;
    client = undefined;
  });

  it('killed: the fallback holds max locally; back: slots are Redis-wide again', async () => {
    ensureBuilt();
    server = await startRedisServer();
    client = await ioredis.connect(server.port, { reconnect: true });
    const store = new RedisStore({
      sendCommand: client.sendCommand,
      timeoutMs: 200,
      probeIntervalMs: 50,
      onError: 'fallback',
      logger: quiet,
    });
    // leaseMs 300: heartbeats every 100 ms carry the leases across the outage.
    const limiter = createConcurrencyLimiter({ max: 1, leaseMs: 300, store });
    const before = await limiter.acquire('k');
    expect(before.decision).toMatchObject({ allowed: true, reason: 'allowed' });

    await server.kill();
    // Redis is gone: the local fallback knows nothing of the lease Redis holds, and lets one in.
    const during = await limiter.acquire('k');
    expect(during.decision).toMatchObject({ allowed: true, reason: 'fallback', remaining: 0 });
    expect((await limiter.acquire('k')).decision).toMatchObject({
      allowed: false,
      reason: 'fallback',
    });
    before.release();

    await server.restart();
    // Back (an empty Redis): the lease taken during the outage is renewed into Redis by its
    // heartbeat, so a newcomer is refused by Redis itself.
    await vi.waitFor(
      async () => {
        const probe = await limiter.acquire('k');
        probe.release(); // a probe let in must not be what refuses the next one
        expect(probe.decision).toMatchObject({ allowed: false, reason: 'limited' });
      },
      { timeout: 5000, interval: 50 },
    );
    during.release();
    await vi.waitFor(
      async () => {
        const next = await limiter.acquire('k');
        next.release();
        expect(next.decision).toMatchObject({ allowed: true, reason: 'allowed' });
      },
      { timeout: 5000, interval: 50 },
    );
    store.close();
  }, 20_000);

  it('paused (no answer): a refusal comes within timeoutMs under onError closed, as a 503 decision', async () => {
    ensureBuilt();
    server = await startRedisServer();
    client = await ioredis.connect(server.port, { reconnect: true });
    const store = new RedisStore({
      sendCommand: client.sendCommand,
      timeoutMs: 150,
      probeIntervalMs: 60_000,
      onError: 'closed',
      logger: quiet,
    });
    const limiter = createConcurrencyLimiter({ max: 5, store });
    server.pause();
    const started = Date.now();
    const lease = await limiter.acquire('k');
    expect(lease.decision).toMatchObject({ allowed: false, reason: 'store-error' });
    expect(Date.now() - started).toBeLessThan(1500);
    server.resume();
    store.close();
  }, 20_000);
});
