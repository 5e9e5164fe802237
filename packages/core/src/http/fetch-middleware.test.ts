// The rule for frameworks whose handlers return a `Response`, on a framework of its own: a call is
// `(request, log, handler)`, and every step the idiom takes is logged in order.
import { describe, expect, it } from 'vitest';
import type { Decision } from '../decision.js';
import { manualClock } from '../testing/manual-clock.js';
import { createAuthGate } from './auth-gate.js';
import { fetchRawRequest } from './fetch.js';
import {
  answerResponse,
  type FetchIdiom,
  fetchGuard,
  fetchRateLimit,
  withResponseHeaders,
} from './fetch-middleware.js';
import { createRequestGate } from './request-gate.js';

type Handler = (request: Request) => Response | Promise<Response>;

const idiom: FetchIdiom<Request, string[], Handler, Request, Response> = {
  request: (request) => request,
  raw: (request) => fetchRawRequest(request, '192.0.2.1'),
  req: (request) => request,
  expose: (decision, _request, log) => log.push(`expose ${decision.reason}`),
  prepare: (_headers, _request, log) => log.push('prepare'),
  send(answer, _request, log) {
    log.push(`send ${answer.status}`);
    return answerResponse(answer);
  },
  next(request, log, handler) {
    log.push('next');
    return handler(request);
  },
  response: (handed) => handed as Response,
  finish: (response, headers) => withResponseHeaders(response, headers),
  limited: (response, headers) => withResponseHeaders(response, headers),
  replace: (response) => response,
};

const ok: Handler = () => new Response('ok');
const get = (init?: RequestInit) => new Request('http://x/', init);

describe('fetchRateLimit', () => {
  const clock = manualClock(0);
  const gate = (options = {}) =>
    createRequestGate<Request, Response>({ limit: 1, clock, timers: clock, ...options });

  it('allowed: exposes, prepares, hands on, adds the counters; refused: the 429 as a Response', async () => {
    const mw = fetchRateLimit(gate(), idiom);
    const log: string[] = [];
    const first = await mw(get(), log, ok);
    expect(await first.text()).toBe('ok');
    expect(first.headers.get('ratelimit')).toBe('"default";r=0;t=60');
    const second = await mw(get(), log, ok);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('60');
    expect(await second.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect(log).toEqual(['expose allowed', 'prepare', 'next', 'expose limited', 'send 429']);
  });

  it('onLimited answers with the counter headers prepared and added to its response', async () => {
    const seen: Decision[] = [];
    const mw = fetchRateLimit(gate(), idiom, {
      onLimited: (decision) => {
        seen.push(decision);
        return new Response('slow down', { status: 429 });
      },
    });
    const log: string[] = [];
    await mw(get(), log, ok);
    const refused = await mw(get(), log, ok);
    expect([refused.status, await refused.text()]).toEqual([429, 'slow down']);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(seen.map((d) => d.reason)).toEqual(['limited']);
    expect(log.slice(3)).toEqual(['expose limited', 'prepare']);
  });

  it('a skipped request is handed on untouched; every throw rejects, never throws', async () => {
    const skipped = fetchRateLimit(gate({ skip: () => true }), idiom);
    const log: string[] = [];
    const response = await skipped(get(), log, ok);
    expect([log, response.headers.has('ratelimit')]).toEqual([['next'], false]);
    const boom = () => {
      throw new Error('boom');
    };
    const throwing = fetchRateLimit(gate({ key: boom }), idiom);
    const call = throwing(get(), [], ok);
    expect(call).toBeInstanceOf(Promise);
    await expect(call).rejects.toThrow('boom');
    await expect(skipped(get(), [], boom)).rejects.toThrow('boom');
  });

  it('skipFailedRequests: a 500, a thrown handler and a client that left first are refunded', async () => {
    const g = gate({ limit: 5, skipFailedRequests: true });
    const mw = fetchRateLimit(g, idiom);
    await mw(get(), [], () => new Response('', { status: 500 }));
    await expect(
      mw(get(), [], () => {
        throw new Error('handler');
      }),
    ).rejects.toThrow('handler');
    const left = new AbortController();
    const pending = mw(get({ signal: left.signal }), [], async () => {
      left.abort();
      return new Response('late');
    });
    await pending;
    expect((await mw(get(), [], ok)).headers.get('ratelimit')).toBe('"default";r=4;t=60');
  });

  it('carries the gate’s controls and the name it is given', () => {
    const g = gate();
    const mw = fetchRateLimit(g, idiom, { name: 'portcullisRateLimit' });
    expect([mw.name, mw.limiter, mw.reconfigure, mw.close]).toEqual([
      'portcullisRateLimit',
      g.limiter,
      g.reconfigure,
      g.close,
    ]);
  });
});

describe('fetchGuard', () => {
  const verify = (request: Request) => {
    const token = request.headers.get('authorization');
    return token === null ? 'missing' : token === 'right' ? 'ok' : 'invalid';
  };

  it('a pass hands on; a refusal is the gate’s answer and the handler is not run', async () => {
    const mw = fetchGuard(createAuthGate<Request>({ verify }), idiom, { name: 'guard' });
    const log: string[] = [];
    const passed = await mw(get({ headers: { authorization: 'right' } }), log, ok);
    const refused = await mw(get({ headers: { authorization: 'wrong' } }), log, ok);
    expect([passed.status, refused.status, log]).toEqual([200, 401, ['next', 'send 401']]);
    expect(await refused.json()).toMatchObject({ details: { authReason: 'invalid' } });
    expect(mw.name).toBe('guard');
  });

  it('a throwing verify rejects the promise the middleware returns', async () => {
    const mw = fetchGuard(
      createAuthGate<Request>({
        verify: () => {
          throw new Error('verify');
        },
      }),
      idiom,
    );
    const call = mw(get(), [], ok);
    expect(call).toBeInstanceOf(Promise);
    await expect(call).rejects.toThrow('verify');
  });
});

describe('withResponseHeaders', () => {
  it('adds only the fields the response lacks; immutable headers are copied first', () => {
    const own = withResponseHeaders(new Response('', { headers: { a: 'mine' } }), {
      a: '1',
      b: '2',
    });
    expect([own.headers.get('a'), own.headers.get('b')]).toEqual(['mine', '2']);
    const redirect = Response.redirect('http://x/elsewhere', 302);
    const copied = withResponseHeaders(redirect, { b: '2' });
    expect([copied === redirect, copied.status, copied.headers.get('b')]).toEqual([
      false,
      302,
      '2',
    ]);
  });
});
