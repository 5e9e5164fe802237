// An Express 5 app: `POST /login` behind the gateway's brute-force lockout (`authGuard`), every
// `/api` route behind one request budget per client (`rateLimit`). src/server.js listens; the
// tests drive `createApp` directly.
import { createHash, timingSafeEqual } from 'node:crypto';
import { authGuard, rateLimit } from '@portcullis/express';
import express from 'express';

/** The password accepted when `LOGIN_PASSWORD` is not set. For the demo only. */
export const DEMO_PASSWORD = 'open sesame';

/** @param {string} value */
const digest = (value) => createHash('sha256').update(value).digest();

/**
 * @param {object} [options]
 * @param {string} [options.password] the one accepted password
 * @param {import('@portcullis/core').Clock & import('@portcullis/core').Timers} [options.clock]
 *   injected time, for tests (`manualClock()` from `@portcullis/core/testing`)
 */
export function createApp({ password = process.env.LOGIN_PASSWORD || DEMO_PASSWORD, clock } = {}) {
  const expected = digest(password);
  const time = clock ? { clock, timers: clock } : {};
  const app = express();

  app.post(
    '/login',
    express.json(),
    authGuard({
      scope: 'password',
      // 5 wrong passwords within a minute lock the client out for a minute. The gateway preset
      // (10 / 60 s / 5 min) exempts loopback; this demo does not, so you can see it on localhost.
      maxAttempts: 5,
      windowMs: 60_000,
      lockoutMs: 60_000,
      exemptLoopback: false,
      ...time,
      // Runs on every attempt, locked out or not: keep it cheap and constant-time.
      verify: (req) => {
        const given = req.body?.password;
        if (typeof given !== 'string' || given === '') return 'missing';
        return timingSafeEqual(digest(given), expected) ? 'ok' : 'invalid';
      },
    }),
    (_req, res) => {
      res.json({ ok: true, message: 'welcome' });
    },
  );

  // One budget for every /api route: 10 requests a minute per client IP.
  const api = express.Router();
  api.use(rateLimit({ name: 'api', limit: 10, windowMs: 60_000, ...time }));
  api.get('/hello', (req, res) => {
    res.json({ hello: 'world', remaining: req.rateLimit?.remaining });
  });
  api.get('/quota', (req, res) => {
    res.json(req.rateLimit); // the Decision behind this request
  });
  app.use('/api', api);

  return app;
}
