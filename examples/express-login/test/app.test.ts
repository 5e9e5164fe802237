import { manualClock } from '@portcullis/core/testing';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApp, DEMO_PASSWORD } from '../src/app.js';

const PASSWORD = 'correct horse battery staple';

const LOCKED_OUT = {
  code: 'INVALID_REQUEST',
  message: 'unauthorized: too many failed authentication attempts (retry later)',
  retryable: true,
  retryAfterMs: 60_000,
  details: {
    code: 'AUTH_RATE_LIMITED',
    authReason: 'rate_limited',
    recommendedNextStep: 'wait_then_retry',
  },
};

function setup() {
  const clock = manualClock(1_000_000);
  const app = createApp({ password: PASSWORD, clock });
  const login = (password?: string) => {
    const req = request(app).post('/login');
    return password === undefined ? req : req.send({ password });
  };
  return { app, clock, login };
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('POST /login (authGuard)', () => {
  it('lets the right password in', async () => {
    const { login } = setup();
    const res = await login(PASSWORD).expect(200);
    expect(res.body).toEqual({ ok: true, message: 'welcome' });
    expect(res.headers['ratelimit']).toBeUndefined();
  });

  it('locks a client out after 5 wrong passwords, refusing even the right one until the lockout ends', async () => {
    const { clock, login } = setup();
    for (let i = 1; i <= 5; i++) {
      const res = await login('guess').expect(401);
      expect(res.body.details).toEqual({ code: 'AUTH_INVALID', authReason: 'invalid' });
    }
    const locked = await login(PASSWORD).expect(429);
    expect(locked.headers['retry-after']).toBe('60');
    expect(locked.body).toEqual(LOCKED_OUT);

    clock.advance(59_999);
    await login(PASSWORD).expect(429).expect('Retry-After', '1');
    clock.advance(1);
    await login(PASSWORD).expect(200);
  });

  it('never counts missing credentials', async () => {
    const { login, app } = setup();
    for (let i = 0; i < 10; i++) {
      const res = await login().expect(401);
      expect(res.body.details).toEqual({ code: 'AUTH_MISSING', authReason: 'missing' });
    }
    await login('').expect(401);
    await request(app).post('/login').type('form').send('password=guess').expect(401);
    for (let i = 0; i < 4; i++) await login('guess').expect(401);
    await login(PASSWORD).expect(200);
  });

  it('forgets earlier failures after a successful login', async () => {
    const { login } = setup();
    for (let i = 0; i < 4; i++) await login('guess').expect(401);
    await login(PASSWORD).expect(200);
    for (let i = 0; i < 4; i++) await login('guess').expect(401);
    await login(PASSWORD).expect(200);
  });

  it('takes the password from LOGIN_PASSWORD, else the demo value', async () => {
    vi.stubEnv('LOGIN_PASSWORD', 'from-env');
    await request(createApp()).post('/login').send({ password: 'from-env' }).expect(200);
    vi.stubEnv('LOGIN_PASSWORD', '');
    await request(createApp()).post('/login').send({ password: DEMO_PASSWORD }).expect(200);
  });
});

describe('/api (rateLimit)', () => {
  it('allows 10 requests a minute per client across every /api route, then answers 429', async () => {
    const { app, clock } = setup();
    for (let i = 1; i <= 10; i++) {
      const res = await request(app)
        .get(i % 2 ? '/api/hello' : '/api/quota')
        .expect(200);
      expect(res.headers['ratelimit-policy']).toBe('"api";q=10;w=60');
      expect(res.headers['ratelimit']).toBe(`"api";r=${10 - i};t=60`);
    }
    const refused = await request(app).get('/api/hello').expect(429);
    expect(refused.headers['retry-after']).toBe('60');
    expect(refused.body).toEqual({
      code: 'RATE_LIMITED',
      message: 'too many requests; retry after 60s',
      retryable: true,
      retryAfterMs: 60_000,
    });

    clock.advance(60_000);
    const again = await request(app).get('/api/hello').expect(200);
    expect(again.body).toEqual({ hello: 'world', remaining: 9 });
  });

  it('hands the decision to handlers', async () => {
    const { app } = setup();
    const res = await request(app).get('/api/quota').expect(200);
    expect(res.body).toMatchObject({ allowed: true, reason: 'allowed', limit: 10, remaining: 9 });
    expect(res.body.key).toMatch(/127\.0\.0\.1$/);
  });

  it('keeps the login lockout and the API budget apart', async () => {
    const { app, login } = setup();
    for (let i = 0; i < 10; i++) await request(app).get('/api/hello').expect(200);
    await request(app).get('/api/hello').expect(429);
    await login(PASSWORD).expect(200);
    for (let i = 0; i < 5; i++) await login('guess').expect(401);
    await login(PASSWORD).expect(429);
    await request(app).get('/api/hello').expect(429);
  });

  it('does not limit routes outside /api', async () => {
    const { app } = setup();
    for (let i = 0; i < 12; i++) {
      const res = await request(app).get('/elsewhere').expect(404);
      expect(res.headers['ratelimit']).toBeUndefined();
    }
  });
});
