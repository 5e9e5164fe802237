// A Koa 3 API: every /api route behind one sliding-window budget per client (`rateLimit`), and
// `POST /hooks/:name` behind the gateway's webhook failure limiter (`webhookGuard`).
// src/server.js listens; the tests drive `createApp` directly.
import { createHash, timingSafeEqual } from 'node:crypto';
import { rateLimit, webhookGuard } from '@portcullis/koa';
import Koa from 'koa';

/** The webhook token accepted when `HOOK_TOKEN` is not set. For the demo only. */
export const DEMO_HOOK_TOKEN = 'demo-hook-token';

const HOOK_ROUTE = /^\/hooks\/([\w-]{1,64})$/;

/** @param {string} value */
const digest = (value) => createHash('sha256').update(value).digest();

/**
 * @param {object} [options]
 * @param {string} [options.hookToken] the token webhooks must send in `X-Hook-Token`
 * @param {import('@portcullis/core').Clock & import('@portcullis/core').Timers} [options.clock]
 *   injected time, for tests (`manualClock()` from `@portcullis/core/testing`)
 */
export function createApp({ hookToken = process.env.HOOK_TOKEN || DEMO_HOOK_TOKEN, clock } = {}) {
  const expected = digest(hookToken);
  const time = clock ? { clock, timers: clock } : {};

  // 10 requests per 10 s, sliding: the previous window still weighs in proportion to its overlap,
  // so a client cannot fire 10 at the end of one window and 10 more at the start of the next.
  const api = rateLimit({
    name: 'api',
    algorithm: 'sliding-window',
    limit: 10,
    windowMs: 10_000,
    ...time,
  });

  // The gateway's webhook numbers: 20 wrong or missing tokens a minute per client IP → 60 s of 429.
  // A right token always passes and clears the sender's count (loopback is not exempt).
  const hooks = webhookGuard({
    ...time,
    verify: (req) => {
      const token = req.get('x-hook-token');
      if (token === '') return 'missing';
      return timingSafeEqual(digest(token), expected) ? 'ok' : 'invalid';
    },
  });

  const app = new Koa();
  app.use(async (ctx, next) => {
    const hook = ctx.method === 'POST' ? HOOK_ROUTE.exec(ctx.path) : null;
    if (hook === null) return next();
    return hooks(ctx, async () => {
      ctx.status = 202;
      ctx.body = { accepted: hook[1] };
    });
  });
  app.use(async (ctx, next) => {
    if (!ctx.path.startsWith('/api/')) return next();
    return api(ctx, async () => {
      if (ctx.path === '/api/items') ctx.body = { items: ['alpha', 'beta', 'gamma'] };
      else if (ctx.path === '/api/quota') ctx.body = ctx.state.rateLimit; // this request's Decision
    });
  });
  return app;
}
