// Outcome-based counting over a shared Redis: an Express app whose limiter lives in a real
// RedisStore gives back the units of the requests its outcome options exempt, through the store's
// one-script refund, into the window they were spent in.
import type { AddressInfo } from 'node:net';
import { rateLimit } from '@portcullis/express';
import express from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../packages/redis/src/index.js';
import { decodeState, deletePrefix, ioredis, type TestClient, uniquePrefix } from './helpers.js';

describe('outcome-based counting over RedisStore (Express)', () => {
  let client: TestClient;
  const prefixes: string[] = [];
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(async () => {
    for (const prefix of prefixes) await deletePrefix(client.sendCommand, prefix);
    await client?.close();
  });

  /** An app answering the status asked for in `x-status` (200 by default), behind `limit`. */
  function app(options: Parameters<typeof rateLimit>[0]) {
    const prefix = uniquePrefix('outcomes');
    prefixes.push(prefix);
    const store = new RedisStore({ sendCommand: client.sendCommand, prefix, onError: 'closed' });
    const a = express();
    a.post('/login', rateLimit({ ...options, store }), (req, res) => {
      res.sendStatus(Number(req.get('x-status') ?? 200));
    });
    return { app: a, store, prefix };
  }

  /** Sends `n` requests one after the other; their statuses. */
  async function statuses(
    target: ReturnType<typeof request.agent>,
    n: number,
    status?: number,
  ): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = target.post('/login');
      out.push((await (status === undefined ? r : r.set('x-status', String(status)))).status);
    }
    return out;
  }

  it('skipSuccessfulRequests: successes are given back, failures count', async () => {
    const {
      app: a,
      store,
      prefix,
    } = app({
      name: 'login',
      limit: 2,
      windowMs: 60_000,
      skipSuccessfulRequests: true,
    });
    const server = a.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const agent = request.agent(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      expect(await statuses(agent, 5)).toEqual([200, 200, 200, 200, 200]);
      // Every success was counted up front and given back: the window in Redis holds nothing.
      const key = `${prefix}login:`;
      // The whole SCAN walk: one page of a shared Redis that holds other suites' keys may miss it.
      const found: string[] = [];
      let cursor = '0';
      do {
        const page = (await client.sendCommand(
          ['SCAN', cursor, 'MATCH', `${key}*`, 'COUNT', '1000'],
          undefined,
        )) as [string, string[]];
        cursor = page[0];
        found.push(...page[1]);
      } while (cursor !== '0');
      expect(found).toHaveLength(1);
      const windowKey = found[0] as string;
      expect(decodeState(await client.getBuffer(windowKey))).toMatchObject({ kind: 'F' });
      expect(decodeState(await client.getBuffer(windowKey))?.numbers[2]).toBe(0);

      expect(await statuses(agent, 2, 401)).toEqual([401, 401]);
      const refused = await agent.post('/login');
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      // A refused request spent nothing and is given nothing back: still refused.
      expect(await statuses(agent, 2)).toEqual([429, 429]);
      expect(decodeState(await client.getBuffer(windowKey))?.numbers[2]).toBe(2);
      expect(store.degraded).toBe(false);
    } finally {
      await new Promise((r) => server.close(r));
      store.close();
    }
  });

  it('skipFailedRequests: failures are given back, successes count', async () => {
    const { app: a, store } = app({
      name: 'signup',
      limit: 2,
      windowMs: 60_000,
      skipFailedRequests: true,
    });
    const server = a.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const agent = request.agent(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      expect(await statuses(agent, 4, 500)).toEqual([500, 500, 500, 500]);
      expect(await statuses(agent, 3)).toEqual([200, 200, 429]);
      expect(store.degraded).toBe(false);
    } finally {
      await new Promise((r) => server.close(r));
      store.close();
    }
  });
});
