import { manualClock } from '@portcullis/core/testing';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';

const apps: FastifyInstance[] = [];

async function setup() {
  const clock = manualClock(9_000_000);
  const app = await createApp({ clock });
  apps.push(app);
  const get = (url: string, remoteAddress = '203.0.113.7') =>
    app.inject({ method: 'GET', url, remoteAddress });
  return { app, clock, get };
}

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

describe('the plugin: one budget per client for every route', () => {
  it('allows 30 requests a minute across routes, then answers 429 until the window ends', async () => {
    const { clock, get } = await setup();
    for (let i = 1; i <= 30; i++) {
      const res = await get(i % 2 ? '/api/books' : '/api/quota');
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"api";q=30;w=60');
      expect(res.headers['ratelimit']).toBe(`"api";r=${30 - i};t=60`);
    }
    const refused = await get('/api/books');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.json()).toEqual({
      code: 'RATE_LIMITED',
      message: 'too many requests; retry after 60s',
      retryable: true,
      retryAfterMs: 60_000,
    });

    clock.advance(60_000);
    const again = await get('/api/books');
    expect(again.statusCode).toBe(200);
    expect(again.json().books).toHaveLength(5);
  });

  it('keeps clients apart', async () => {
    const { get } = await setup();
    for (let i = 0; i < 30; i++) await get('/api/books', '203.0.113.7');
    expect((await get('/api/books', '203.0.113.7')).statusCode).toBe(429);
    const other = await get('/api/books', '198.51.100.20');
    expect(other.statusCode).toBe(200);
    expect(other.headers['ratelimit']).toBe('"api";r=29;t=60');
  });

  it('hands the decision to handlers', async () => {
    const { get } = await setup();
    const res = await get('/api/quota', '2001:db8::1');
    expect(res.json()).toMatchObject({
      allowed: true,
      reason: 'allowed',
      limit: 30,
      remaining: 29,
      key: '2001:db8::/64',
    });
  });
});

describe('config.rateLimit on a route', () => {
  it('gives /api/search a stricter budget of its own, apart from the shared one', async () => {
    const { get } = await setup();
    for (let i = 1; i <= 5; i++) {
      const res = await get('/api/search?q=dune');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ results: ['Dune'] });
      expect(res.headers['ratelimit-policy']).toBe('"search";q=5;w=60');
      expect(res.headers['ratelimit']).toBe(`"search";r=${5 - i};t=60`);
    }
    const refused = await get('/api/search?q=dune');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('60');
    // The shared budget was not touched by the searches.
    expect((await get('/api/books')).headers['ratelimit']).toBe('"api";r=29;t=60');
  });

  it('leaves /health unlimited (`false`), without headers, and uncounted', async () => {
    const { get } = await setup();
    for (let i = 0; i < 100; i++) {
      const res = await get('/health');
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit']).toBeUndefined();
      expect(res.headers['ratelimit-policy']).toBeUndefined();
    }
    expect((await get('/api/books')).headers['ratelimit']).toBe('"api";r=29;t=60');
  });
});
