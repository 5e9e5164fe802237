/*
 * `concurrency` (docs/design.md#concurrency) on every framework and both stores: at most `max`
 * requests of a key in flight, refused with the exact 429; a slot comes back when its response
 * ends, when its handler throws and when its client goes away, never later and never twice.
 */
import http from 'node:http';
import { createConcurrencyLimiter, MemoryStore, type Store } from '@portcullis/core';
import { RedisStore } from '@portcullis/redis';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  deletePrefix,
  ensureBuilt,
  ioredis,
  type TestClient,
  uniquePrefix,
} from '../redis/helpers.js';
import { type App, type Call, frameworks, holds, json } from './harness.js';

let redis: TestClient;
const prefixes: string[] = [];

beforeAll(async () => {
  ensureBuilt();
  redis = await ioredis.connect();
}, 60_000);

afterAll(async () => {
  for (const p of prefixes) await deletePrefix(redis.sendCommand, p);
  await redis?.close();
});

const stores: readonly { readonly name: string; make(): Store }[] = [
  { name: 'MemoryStore', make: () => new MemoryStore() },
  {
    name: 'RedisStore',
    make() {
      const prefix = uniquePrefix('conc');
      prefixes.push(prefix);
      return new RedisStore({ sendCommand: redis.sendCommand, prefix, onError: 'closed' });
    },
  },
];

const REFUSED = {
  code: 'RATE_LIMITED',
  message: 'too many requests; retry after 1s',
  retryable: true,
  retryAfterMs: 1000,
};

let ids = 0;
/** A request its handler holds until `open()`; `reply` settles once it answered. */
function held(app: App, extra: Record<string, string> = {}) {
  const id = `h${++ids}`;
  const reply = app.send({ path: '/busy', headers: { 'x-hold': id, ...extra } });
  return { id, reply, reached: holds.reached(id), open: () => holds.open(id) };
}

const busy = (headers: Record<string, string> = {}): Call => ({ path: '/busy', headers });

describe.each(stores)('concurrency on $name', (storeKind) => {
  describe.each(frameworks)('$name', (fw) => {
    it('lets max requests in, refuses the next with the 429, and reopens as one ends', async () => {
      const app = await fw.build({ concurrency: { max: 2, store: storeKind.make() } });
      try {
        const a = held(app);
        const b = held(app);
        await Promise.all([a.reached, b.reached]);
        const refused = await app.send(busy());
        expect(refused.status).toBe(429);
        expect(refused.headers['retry-after']).toBe('1');
        expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(json(refused)).toEqual(REFUSED);
        a.open();
        expect((await a.reply).status).toBe(200);
        // A's slot is back: one more fits beside B, and B's end frees another.
        const c = held(app);
        await c.reached;
        expect((await app.send(busy())).status).toBe(429);
        b.open();
        c.open();
        expect([(await b.reply).status, (await c.reply).status]).toEqual([200, 200]);
        expect(json(await app.send(busy()))).toEqual({ ok: true });
      } finally {
        await app.close();
      }
    });

    it('a handler that throws gives its slot back', async () => {
      const app = await fw.build({ concurrency: { max: 1, store: storeKind.make() } });
      try {
        expect((await app.send(busy({ 'x-throw': '1' }))).status).toBe(500);
        expect((await app.send(busy({ 'x-throw': '1' }))).status).toBe(500);
        expect((await app.send(busy())).status).toBe(200);
      } finally {
        await app.close();
      }
    });

    it('keys are independent, and a skipped request takes no slot', async () => {
      const app = await fw.build({
        concurrency: {
          max: 1,
          store: storeKind.make(),
          key: (req) => String(req.headers['x-key'] ?? 'none'),
          skip: (req) => req.headers['x-skip'] !== undefined,
        },
      });
      try {
        const a = held(app, { 'x-key': 'a' });
        await a.reached;
        expect((await app.send(busy({ 'x-key': 'a' }))).status).toBe(429);
        expect((await app.send(busy({ 'x-key': 'b' }))).status).toBe(200);
        expect((await app.send(busy({ 'x-key': 'a', 'x-skip': '1' }))).status).toBe(200);
        a.open();
        expect((await a.reply).status).toBe(200);
        expect((await app.send(busy({ 'x-key': 'a' }))).status).toBe(200);
      } finally {
        await app.close();
      }
    });

    it('onLimited answers a refusal, with Retry-After set', async () => {
      const onLimited = { called: 0 };
      const app = await fw.build({
        concurrency: {
          max: 1,
          store: storeKind.make(),
          // Each framework's own signature; the harness passes it through unchanged.
          onLimited: onLimitedOf(fw.name, onLimited),
        } as never,
      });
      try {
        const a = held(app);
        await a.reached;
        const refused = await app.send(busy());
        expect([refused.status, refused.headers['retry-after'], refused.text]).toEqual([
          503,
          '1',
          'busy, come back',
        ]);
        expect(onLimited.called).toBe(1);
        a.open();
        await a.reply;
      } finally {
        await app.close();
      }
    });

    it('queue: a refused request waits for the slot, one more is refused at once', async () => {
      const app = await fw.build({
        concurrency: { max: 1, queue: 1, queuePollMs: 20, store: storeKind.make() },
      });
      try {
        const a = held(app);
        await a.reached;
        const b = held(app);
        let bRan = false;
        void b.reached.then(() => {
          bRan = true;
        });
        // B waits in line (its handler has not run); C finds the line full.
        const c = await app.send(busy());
        expect([c.status, c.headers['retry-after'], json(c)]).toEqual([429, '1', REFUSED]);
        expect(bRan).toBe(false);
        a.open();
        expect((await a.reply).status).toBe(200);
        await b.reached;
        b.open();
        expect((await b.reply).status).toBe(200);
        expect((await app.send(busy())).status).toBe(200);
      } finally {
        await app.close();
      }
    });

    it('queue: a request that waited queueTimeoutMs gets the 429', async () => {
      const clock = manualClock(Date.now());
      const app = await fw.build({
        concurrency: {
          max: 1,
          queue: 1,
          queueTimeoutMs: 5000,
          store: storeKind.make(),
          timers: clock,
        },
      });
      try {
        const a = held(app);
        await a.reached;
        const waited = app.send(busy());
        // The waiter is in line once the 5 s timeout is pending beside A's heartbeat.
        await vi.waitFor(() => expect(clock.pendingTimers()).toBeGreaterThanOrEqual(2), {
          interval: 5,
        });
        clock.advance(5000);
        const refused = await waited;
        expect([refused.status, refused.headers['retry-after'], json(refused)]).toEqual([
          429,
          '1',
          REFUSED,
        ]);
        a.open();
        await a.reply;
      } finally {
        await app.close();
      }
    });

    // A client leaves by closing its socket; in-process Fetch callers leave by aborting the
    // request's signal. Fastify's inject has no client that can leave: its listening variant
    // covers Fastify.
    const leave = fw.overSocket
      ? leaveBySocket
      : /^(hono|fetch)/.test(fw.name)
        ? leaveBySignal
        : undefined;
    if (leave !== undefined)
      it('a client that goes away gives its slot back', async () => {
        const app = await fw.build({ concurrency: { max: 1, store: storeKind.make() } });
        try {
          const id = `gone${++ids}`;
          const gone = leave(app, id);
          await holds.reached(id);
          expect((await app.send(busy())).status).toBe(429);
          gone();
          // The server sees the close on its own schedule: ask until it has.
          await vi.waitFor(async () => expect((await app.send(busy())).status).toBe(200), {
            timeout: 5000,
            interval: 20,
          });
          holds.open(id);
        } finally {
          await app.close();
        }
      });
    if (leave !== undefined)
      it('queue: a client that leaves while it waits gives up its place, and its handler never runs', async () => {
        const limiter = createConcurrencyLimiter({ max: 1, queue: 1, store: storeKind.make() });
        const app = await fw.build({ concurrency: { limiter } });
        try {
          const a = held(app);
          await a.reached;
          const id = `queued${++ids}`;
          let ran = false;
          void holds.reached(id).then(() => {
            ran = true;
          });
          const gone = leave(app, id);
          await vi.waitFor(() => expect(limiter.queued()).toBe(1), { interval: 5 });
          gone();
          // The server hears of the close on its own schedule.
          await vi.waitFor(() => expect(limiter.queued()).toBe(0), { interval: 5 });
          a.open();
          await a.reply;
          expect((await app.send(busy())).status).toBe(200);
          expect(ran).toBe(false);
        } finally {
          await app.close();
          await limiter.close();
        }
      });
  });
});

/** Sends a held request over a socket; the returned function destroys the socket. */
function leaveBySocket(app: App, id: string): () => void {
  const req = http.get({
    host: '127.0.0.1',
    port: app.port,
    path: '/busy',
    headers: { 'x-hold': id },
  });
  req.on('error', () => undefined);
  return () => req.destroy();
}

/** Sends a held request in-process; the returned function aborts its signal. */
function leaveBySignal(app: App, id: string): () => void {
  const aborted = new AbortController();
  app.send({ ...busy({ 'x-hold': id }), signal: aborted.signal }).catch(() => undefined);
  return () => aborted.abort();
}

/** An `onLimited` in the signature of the framework named `name`: 503 with a text body. */
function onLimitedOf(name: string, seen: { called: number }): unknown {
  const text = 'busy, come back';
  if (name.startsWith('express'))
    return (_req: unknown, res: { status(n: number): { send(t: string): void } }) => {
      seen.called++;
      res.status(503).send(text);
    };
  if (name.startsWith('koa'))
    return (_req: unknown, ctx: { status: number; body: unknown }) => {
      seen.called++;
      ctx.status = 503;
      ctx.body = text;
    };
  if (name.startsWith('fastify'))
    return (_req: unknown, reply: { code(n: number): { send(t: string): void } }) => {
      seen.called++;
      reply.code(503).send(text);
    };
  if (name.startsWith('hono'))
    return (c: { text(t: string, s: number): Response }) => {
      seen.called++;
      return c.text(text, 503);
    };
  return () => {
    seen.called++;
    return new Response(text, { status: 503 });
  };
}
