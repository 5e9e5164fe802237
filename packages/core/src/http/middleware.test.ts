// The rules every adapter's middleware shares, on a framework of its own: a call is
// `(req, res, next)`, the response records what was written, and every step is logged in order.
import { describe, expect, it } from 'vitest';
import type { Decision } from '../decision.js';
import { createFailureLimiter } from '../failure-limiter.js';
import { manualClock } from '../testing/manual-clock.js';
import type { HttpAnswer } from './answer.js';
import { createAuthGate } from './auth-gate.js';
import { guardMiddleware, type RateLimitIdiom, rateLimitMiddleware } from './middleware.js';
import { createRequestGate } from './request-gate.js';
import { createWebhookGate } from './webhook-gate.js';

interface Req {
  readonly ip: string;
  readonly token?: string;
  rateLimit?: Decision;
}
interface Res {
  headersSent: boolean;
  status?: number;
  headers: Record<string, string>;
  body?: string;
  readonly log: string[];
  statusCode: number;
  writableFinished: boolean;
  once(event: string, listener: () => void): unknown;
}
type Next = (error?: unknown) => void;

const request = (ip: string, token?: string): Req => ({ ip, ...(token && { token }) });
function response(sent = false): Res {
  return {
    headersSent: sent,
    headers: {},
    log: [],
    statusCode: 200,
    writableFinished: true,
    once: () => undefined,
  };
}

const idiom: RateLimitIdiom<Req, Res, Next, Req, Res> = {
  raw: (req) => ({ socket: { remoteAddress: req.ip }, headers: {} }),
  req: (req) => req,
  sent: (_req, res) => res.headersSent,
  setHeaders(headers, _req, res) {
    Object.assign(res.headers, headers);
    res.log.push('headers');
  },
  send(answer: HttpAnswer, _req, res) {
    res.status = answer.status;
    Object.assign(res.headers, answer.headers);
    res.body = answer.body;
    res.headersSent = true;
    res.log.push(`send ${answer.status}`);
  },
  next: (_req, _res, next) => next(),
  fail: (error, _req, _res, next) => next(error),
  expose(decision, req, res) {
    req.rateLimit = decision;
    res.log.push(`expose ${decision.reason}`);
  },
  rawRes: (_req, res) => res,
  res: (_req, res) => res,
};

/** Runs a middleware once; the log ends with what `next` received. */
async function call(
  mw: (req: Req, res: Res, next: Next) => unknown,
  req: Req,
  res = response(),
): Promise<Res> {
  await mw(req, res, (error?: unknown) =>
    res.log.push(error === undefined ? 'next' : `next(${String(error)})`),
  );
  return res;
}

describe('rateLimitMiddleware', () => {
  const clock = manualClock(0);
  const gate = () =>
    createRequestGate<Req, Res>({ limit: 1, windowMs: 60_000, clock, timers: clock });

  it('allowed: exposes, sets the counters, hands on; refused: exposes and writes the 429', async () => {
    const mw = rateLimitMiddleware(gate(), idiom);
    const allowed = await call(mw, request('203.0.113.1'));
    expect(allowed.log).toEqual(['expose allowed', 'headers', 'next']);
    expect(allowed.headers).toEqual({
      'RateLimit-Policy': '"default";q=1;w=60',
      RateLimit: '"default";r=0;t=60',
    });
    const refused = await call(mw, request('203.0.113.1'));
    expect(refused.log).toEqual(['expose limited', 'send 429']);
    expect([refused.status, refused.headers['Retry-After']]).toEqual([429, '60']);
  });

  it('a response an earlier middleware sent is left alone: no header set, no answer, no route', async () => {
    const mw = rateLimitMiddleware(gate(), idiom, {
      onLimited: (_d, _req, res) => void res.log.push('onLimited'),
    });
    expect((await call(mw, request('203.0.113.2'), response(true))).log).toEqual([
      'expose allowed',
      'next',
    ]);
    const refused = await call(mw, request('203.0.113.2'), response(true));
    expect([refused.log, refused.headers]).toEqual([['expose limited'], {}]);
  });

  it('onLimited answers a refusal with the counters already set; its rejection goes to fail', async () => {
    const mw = rateLimitMiddleware(gate(), idiom, {
      onLimited: (decision, _req, res) => {
        res.log.push(`onLimited ${decision.retryAfterMs}`);
        return Promise.reject(new Error('down'));
      },
    });
    await call(mw, request('203.0.113.3'));
    const refused = await call(mw, request('203.0.113.3'));
    expect(refused.log).toEqual([
      'expose limited',
      'headers',
      'onLimited 60000',
      'next(Error: down)',
    ]);
    expect(refused.headers['Retry-After']).toBe('60');
  });

  it('a skipped request is handed on untouched; a rejected key goes to fail', async () => {
    const skipped = rateLimitMiddleware(
      createRequestGate<Req, Res>({ skip: () => true, clock, timers: clock }),
      idiom,
    );
    expect((await call(skipped, request('203.0.113.4'))).log).toEqual(['next']);
    const failing = rateLimitMiddleware(
      createRequestGate<Req, Res>({ key: () => Promise.reject(new Error('no key')), clock }),
      idiom,
    );
    expect((await call(failing, request('203.0.113.4'))).log).toEqual(['next(Error: no key)']);
  });

  it('carries the gate’s controls and the name it is given', () => {
    const g = gate();
    const mw = rateLimitMiddleware(g, idiom, { name: 'portcullisRateLimit' });
    expect([mw.name, mw.limiter, mw.reconfigure, mw.close]).toEqual([
      'portcullisRateLimit',
      g.limiter,
      g.reconfigure,
      g.close,
    ]);
  });
});

describe('guardMiddleware', () => {
  const clock = manualClock(0);
  const verify = (req: Req) =>
    req.token === undefined ? 'missing' : req.token === 'right' ? 'ok' : 'invalid';

  it('a pass hands on; a refusal is written as the gate answered it and the route is not run', async () => {
    const mw = guardMiddleware(
      createAuthGate<Req>({ verify, maxAttempts: 1, clock, timers: clock }),
      idiom,
    );
    expect((await call(mw, request('203.0.113.5', 'right'))).log).toEqual(['next']);
    expect((await call(mw, request('203.0.113.5'))).log).toEqual(['send 401']);
    expect((await call(mw, request('203.0.113.5', 'wrong'))).log).toEqual(['send 401']);
    const locked = await call(mw, request('203.0.113.5', 'right'));
    expect([locked.log, locked.headers['Retry-After']]).toEqual([['send 429'], '300']);
    // An earlier middleware answered: nothing more is written.
    expect((await call(mw, request('203.0.113.5', 'right'), response(true))).log).toEqual([]);
  });

  it('a rejected verify goes to fail', async () => {
    const mw = guardMiddleware(
      createWebhookGate<Req>({ verify: () => Promise.reject(new Error('boom')), clock }),
      idiom,
    );
    expect((await call(mw, request('203.0.113.6', 'x'))).log).toEqual(['next(Error: boom)']);
  });

  it('close() closes the limiters the gate built, never one that was passed', async () => {
    const closed: string[] = [];
    const tracked = (name: string) => {
      const limiter = createFailureLimiter({ clock, timers: clock });
      const close = limiter.close;
      return Object.assign(limiter, {
        close: () => {
          closed.push(name);
          return close();
        },
      });
    };
    const shared = tracked('shared');
    await guardMiddleware(createAuthGate<Req>({ verify, limiter: shared }), idiom).close();
    await guardMiddleware(createWebhookGate<Req>({ verify, limiter: shared }), idiom).close();
    expect(closed).toEqual([]);
    // The gate's own limiters run their stores' sweep timers until closed.
    const own = manualClock(0);
    const mw = guardMiddleware(createAuthGate<Req>({ verify, clock: own, timers: own }), idiom);
    await call(mw, request('203.0.113.7', 'wrong'));
    expect(own.pendingTimers()).toBeGreaterThan(0);
    await mw.close();
    expect(own.pendingTimers()).toBe(0);
  });
});
