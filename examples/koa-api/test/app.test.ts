import { manualClock } from '@portcullis/core/testing';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApp, DEMO_HOOK_TOKEN } from '../src/app.js';

const TOKEN = 'hook-secret';

function setup() {
  const clock = manualClock(5_000_000);
  const server = createApp({ hookToken: TOKEN, clock }).callback();
  const get = (path: string) => request(server).get(path);
  const hook = (token?: string, name = 'deploy') => {
    const req = request(server).post(`/hooks/${name}`);
    return token === undefined ? req : req.set('X-Hook-Token', token);
  };
  return { clock, get, hook };
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('/api (rateLimit, sliding window)', () => {
  it('allows 10 requests per 10 s across every /api route and advertises the budget', async () => {
    const { get } = setup();
    for (let i = 1; i <= 10; i++) {
      const res = await get(i % 2 ? '/api/items' : '/api/quota').expect(200);
      expect(res.headers['ratelimit-policy']).toBe('"api";q=10;w=10');
      expect(res.headers['ratelimit']).toBe(`"api";r=${10 - i};t=20`);
    }
    const refused = await get('/api/items').expect(429);
    // The previous window keeps weighing into the next one: the first free slot is 11 s away.
    expect(refused.headers['retry-after']).toBe('11');
    expect(refused.body).toEqual({
      code: 'RATE_LIMITED',
      message: 'too many requests; retry after 11s',
      retryable: true,
      retryAfterMs: 11_000,
    });
  });

  it('still refuses when a fixed window would have reset, then frees slots as the old window slides out', async () => {
    const { clock, get } = setup();
    for (let i = 0; i < 10; i++) await get('/api/items').expect(200);
    clock.advance(10_000); // a new window starts; the previous one still weighs 100 %
    await get('/api/items').expect(429).expect('Retry-After', '1');
    clock.advance(1_000); // it now weighs 90 %: 9 of 10 used, one slot free
    const res = await get('/api/items').expect(200);
    expect(res.body).toEqual({ items: ['alpha', 'beta', 'gamma'] });
    await get('/api/items').expect(429);
    clock.advance(1_000); // 80 %: one more
    await get('/api/items').expect(200);
    await get('/api/items').expect(429);
  });

  it('hands the decision to handlers', async () => {
    const { get } = setup();
    const res = await get('/api/quota').expect(200);
    expect(res.body).toMatchObject({ allowed: true, reason: 'allowed', limit: 10, remaining: 9 });
  });

  it('does not limit or count anything outside /api', async () => {
    const { get, hook } = setup();
    for (let i = 0; i < 12; i++) {
      const res = await get('/elsewhere').expect(404);
      expect(res.headers['ratelimit']).toBeUndefined();
    }
    const accepted = await hook(TOKEN).expect(202);
    expect(accepted.headers['ratelimit']).toBeUndefined();
    await get('/api/items').expect(200).expect('RateLimit', '"api";r=9;t=20');
  });
});

describe('POST /hooks/:name (webhookGuard)', () => {
  it('accepts the right token', async () => {
    const { hook } = setup();
    const res = await hook(TOKEN, 'build-finished').expect(202);
    expect(res.body).toEqual({ accepted: 'build-finished' });
  });

  it('answers 401 to 20 wrong tokens (the 20th starts the lockout) and 429 from the 21st for 60 s', async () => {
    const { clock, hook } = setup();
    for (let i = 1; i <= 20; i++) {
      const res = await hook(`wrong-${i}`).expect(401);
      expect(res.text).toBe('Unauthorized');
    }
    const limited = await hook('wrong-21').expect(429);
    expect(limited.text).toBe('Too Many Requests');
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.headers['content-type']).toBe('text/plain; charset=utf-8');

    clock.advance(30_000);
    await hook().expect(429).expect('Retry-After', '30');
    clock.advance(30_000);
    await hook('wrong').expect(401);
  });

  it('counts missing tokens as failures, across every hook name', async () => {
    const { hook } = setup();
    for (let i = 0; i < 20; i++) await hook(undefined, i % 2 ? 'a' : 'b').expect(401);
    await hook(undefined, 'c').expect(429);
  });

  it('lets a right token through during a lockout and clears the sender’s count', async () => {
    const { hook } = setup();
    for (let i = 0; i < 20; i++) await hook('wrong').expect(401);
    await hook('wrong').expect(429);
    await hook(TOKEN).expect(202);
    await hook('wrong').expect(401);
  });

  it('routes only POST /hooks/<name>', async () => {
    const { get, hook } = setup();
    await get('/hooks/deploy').expect(404);
    await hook(TOKEN, 'has.dot').expect(404);
    await hook(TOKEN, 'x'.repeat(65)).expect(404);
  });

  it('takes the token from HOOK_TOKEN, else the demo value', async () => {
    vi.stubEnv('HOOK_TOKEN', 'from-env');
    await request(createApp().callback())
      .post('/hooks/a')
      .set('X-Hook-Token', 'from-env')
      .expect(202);
    vi.stubEnv('HOOK_TOKEN', '');
    await request(createApp().callback())
      .post('/hooks/a')
      .set('X-Hook-Token', DEMO_HOOK_TOKEN)
      .expect(202);
  });
});
