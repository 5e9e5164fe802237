// A Hono 4 app for @hono/node-server: POST /login behind the gateway's failure limiter
// (`authGuard`), every /api route behind one request budget per client (`rateLimit`), and
// `POST /hooks/:name` behind the webhook failure limiter (`webhookGuard`). The client address is
// the socket of the Node request @hono/node-server hands Hono (its default, no option needed).
// src/server.js listens; the tests serve `createApp()` on port 0.
import { createHash, timingSafeEqual } from 'node:crypto';
import { authGuard, rateLimit, webhookGuard } from '@portcullis/hono';
import { Hono } from 'hono';

/** The password and webhook token accepted when `PASSWORD` / `HOOK_TOKEN` are not set. For the demo only. */
export const DEMO_PASSWORD = 'demo-password';
export const DEMO_HOOK_TOKEN = 'demo-hook-token';

/** @param {string} value */
const digest = (value) => createHash('sha256').update(value).digest();

/**
 * @param {object} [options]
 * @param {string} [options.password] the password POST /login accepts
 * @param {string} [options.hookToken] the token webhooks must send in `X-Hook-Token`
 * @param {import('@portcullis/core').Clock & import('@portcullis/core').Timers} [options.clock]
 *   injected time, for tests (`manualClock()` from `@portcullis/core/testing`)
 */
export function createApp({
  password = process.env.PASSWORD || DEMO_PASSWORD,
  hookToken = process.env.HOOK_TOKEN || DEMO_HOOK_TOKEN,
  clock,
} = {}) {
  const expectedPassword = digest(password);
  const expectedToken = digest(hookToken);
  const time = clock ? { clock, timers: clock } : {};
  const app = new Hono();

  // 5 wrong passwords in a minute → 10 minutes of 429 for that client (a browser page on this
  // machine is limited per origin; a local CLI without an Origin header is exempt).
  const login = authGuard({
    scope: 'password',
    maxAttempts: 5,
    lockoutMs: 600_000,
    ...time,
    // Hono keeps the parsed body: the handler can read c.req.json() again.
    verify: async (c) => {
      const body = await c.req.json().catch(() => null);
      const given = typeof body?.password === 'string' ? body.password : '';
      if (given === '') return 'missing';
      return timingSafeEqual(digest(given), expectedPassword) ? 'ok' : 'invalid';
    },
  });
  app.post('/login', login, async (c) => {
    const { user } = await c.req.json();
    return c.json({ ok: true, user: typeof user === 'string' ? user : null });
  });

  // 10 requests per 10 s per client across every /api route.
  app.use('/api/*', rateLimit({ name: 'api', limit: 10, windowMs: 10_000, ...time }));
  app.get('/api/items', (c) => c.json({ items: ['alpha', 'beta', 'gamma'] }));
  app.get('/api/quota', (c) => c.json(c.get('rateLimit') ?? null)); // this request's Decision

  // The gateway's webhook numbers: 20 wrong or missing tokens a minute per client IP → 60 s of 429.
  // A right token always passes and clears the sender's count (loopback is not exempt).
  const hooks = webhookGuard({
    ...time,
    verify: (c) => {
      const token = c.req.header('x-hook-token') ?? '';
      if (token === '') return 'missing';
      return timingSafeEqual(digest(token), expectedToken) ? 'ok' : 'invalid';
    },
  });
  app.post('/hooks/:name{[\\w-]{1,64}}', hooks, (c) =>
    c.json({ accepted: c.req.param('name') }, 202),
  );
  return app;
}
