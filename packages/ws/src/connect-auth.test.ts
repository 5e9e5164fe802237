import http, { type IncomingMessage } from 'node:http';
import {
  authRateLimitedError,
  createFailureLimiter,
  type Decision,
  type FailureLimiter,
  PortcullisConfigError,
  type RawRequest,
  storeUnavailableError,
} from '@portcullis/core';
import { authFailedError, isPromise } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { closeServer, listen, SECRET, tokenOutcome } from '../test/harness.js';
import { type ConnectAuthOptions, type ConnectAuthResult, createConnectAuth } from './index.js';

const REMOTE_IP = '203.0.113.7';
const LOCKED_REASON = 'unauthorized: too many failed authentication attempts (retry later)';

const request = (ip: string, headers: Record<string, string> = {}): RawRequest => ({
  socket: { remoteAddress: ip },
  headers,
});

/** A connect auth on a manual clock; `attempt` results are asserted to be synchronous. */
function setup(options: ConnectAuthOptions = {}) {
  const clock = manualClock(5_000);
  const auth = createConnectAuth({ clock, timers: clock, ...options });
  const attempt = (
    req: RawRequest,
    outcome: 'ok' | 'invalid' | 'missing',
    scope?: string,
  ): ConnectAuthResult => {
    const result = auth.attempt(req, outcome, scope === undefined ? undefined : { scope });
    if (isPromise(result)) throw new Error('expected a synchronous result with the memory store');
    return result;
  };
  return { auth, clock, attempt };
}

describe('createConnectAuth: attempt', () => {
  it('counts wrong credentials: the 10th is still invalid, the 11th gets the exact lockout shape and close code 1008', () => {
    const { attempt } = setup();
    const remote = request(REMOTE_IP);
    for (let i = 1; i <= 10; i++) {
      expect(attempt(remote, 'invalid'), `attempt ${i}`).toStrictEqual({
        ok: false,
        reason: 'invalid',
        error: authFailedError('invalid'),
        closeCode: 1008,
        closeReason: 'unauthorized: invalid credentials',
        decision: expect.objectContaining({ key: REMOTE_IP }),
      });
    }
    const locked = attempt(remote, 'invalid');
    expect(locked).toMatchObject({
      ok: false,
      reason: 'rate_limited',
      closeCode: 1008,
      closeReason: LOCKED_REASON,
    });
    if (locked.ok) throw new Error('unreachable');
    expect(locked.error).toStrictEqual(authRateLimitedError(300_000));
    expect(JSON.stringify(locked.error)).toBe(
      '{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts (retry later)",' +
        '"retryable":true,"retryAfterMs":300000,"details":{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited",' +
        '"recommendedNextStep":"wait_then_retry"}}',
    );
    expect(Buffer.byteLength(locked.closeReason)).toBeLessThanOrEqual(123);
  });

  it('refuses the right credentials during a lockout and accepts them when it ends', () => {
    const { attempt, clock } = setup();
    const remote = request(REMOTE_IP);
    for (let i = 0; i < 10; i++) attempt(remote, 'invalid');
    clock.advance(100_000);
    const refused = attempt(remote, 'ok');
    expect(refused).toMatchObject({
      ok: false,
      reason: 'rate_limited',
      error: authRateLimitedError(200_000),
    });
    clock.advance(200_000);
    expect(attempt(remote, 'ok')).toMatchObject({ ok: true, decision: { allowed: true } });
    // Other clients were never affected.
    expect(attempt(request('203.0.113.8'), 'invalid')).toMatchObject({ reason: 'invalid' });
  });

  it('neither checks nor counts missing credentials', () => {
    const { attempt } = setup();
    const remote = request(REMOTE_IP);
    for (let i = 0; i < 30; i++) {
      expect(attempt(remote, 'missing')).toStrictEqual({
        ok: false,
        reason: 'missing',
        error: authFailedError('missing'),
        closeCode: 1008,
        closeReason: 'unauthorized: credentials required',
        decision: undefined,
      });
    }
    for (let i = 0; i < 10; i++)
      expect(attempt(remote, 'invalid')).toMatchObject({ reason: 'invalid' });
    expect(attempt(remote, 'invalid')).toMatchObject({ reason: 'rate_limited' });
    expect(attempt(remote, 'missing')).toMatchObject({ reason: 'missing' });
  });

  it('never locks out a direct loopback client without Origin', () => {
    const { attempt } = setup();
    for (let i = 0; i < 30; i++)
      expect(attempt(request('127.0.0.1'), 'invalid')).toMatchObject({
        reason: 'invalid',
        decision: { reason: 'exempt' },
      });
    expect(attempt(request('::1'), 'ok')).toMatchObject({ ok: true });
  });

  it('gives each browser origin on loopback its own bucket, and keys remote browsers by IP', () => {
    const { attempt } = setup();
    const pageA = request('127.0.0.1', { origin: 'http://a.example' });
    for (let i = 0; i < 10; i++) attempt(pageA, 'invalid');
    expect(attempt(pageA, 'ok')).toMatchObject({
      reason: 'rate_limited',
      decision: { key: 'browser-origin:http://a.example' },
    });
    expect(attempt(request('127.0.0.1', { origin: 'http://b.example' }), 'ok')).toMatchObject({
      ok: true,
    });
    expect(attempt(request('127.0.0.1'), 'ok')).toMatchObject({ ok: true });

    const remotePage = request(REMOTE_IP, { origin: 'http://a.example' });
    for (let i = 0; i < 10; i++) attempt(remotePage, 'invalid');
    expect(attempt(request(REMOTE_IP, { origin: 'http://c.example' }), 'ok')).toMatchObject({
      reason: 'rate_limited',
      decision: { key: REMOTE_IP },
    });
    // The same IP without Origin has the non-browser budget.
    expect(attempt(request(REMOTE_IP), 'ok')).toMatchObject({ ok: true });
  });

  it('follows trusted proxies', () => {
    const { attempt } = setup({ trustedProxies: ['10.0.0.1'] });
    const viaProxy = request('10.0.0.1', { 'x-forwarded-for': '198.51.100.4' });
    for (let i = 0; i < 10; i++) attempt(viaProxy, 'invalid');
    expect(attempt(viaProxy, 'ok')).toMatchObject({
      reason: 'rate_limited',
      decision: { key: '198.51.100.4' },
    });
    expect(attempt(request('10.0.0.1', { 'x-forwarded-for': '198.51.100.5' }), 'ok')).toMatchObject(
      { ok: true },
    );
  });

  it('lets one call override the credential class: scopes lock out independently', () => {
    const { attempt } = setup({ scope: 'shared-secret' });
    const remote = request(REMOTE_IP);
    for (let i = 0; i < 10; i++) attempt(remote, 'invalid');
    expect(attempt(remote, 'ok')).toMatchObject({ reason: 'rate_limited' });
    expect(attempt(remote, 'ok', 'shared-secret')).toMatchObject({ reason: 'rate_limited' });
    expect(attempt(remote, 'invalid', 'device-token')).toMatchObject({ reason: 'invalid' });
    expect(attempt(remote, 'ok', 'device-token')).toMatchObject({ ok: true });
    for (let i = 0; i < 10; i++) attempt(remote, 'invalid', 'device-token');
    expect(attempt(remote, 'ok', 'device-token')).toMatchObject({ reason: 'rate_limited' });
  });

  it('returns a promise with an async store', async () => {
    const clock = manualClock();
    const real = createFailureLimiter({ clock, timers: clock });
    const asyncLimiter: FailureLimiter = {
      ...real,
      check: async (subject, scope) => real.check(subject, scope),
      recordFailure: async (subject, scope) => real.recordFailure(subject, scope),
      recordSuccess: async (subject, scope) => real.recordSuccess(subject, scope),
    };
    const auth = createConnectAuth({ limiter: asyncLimiter });
    const remote = request(REMOTE_IP);
    const first = auth.attempt(remote, 'invalid');
    expect(isPromise(first)).toBe(true);
    expect(await first).toMatchObject({ reason: 'invalid' });
    for (let i = 0; i < 9; i++) await auth.attempt(remote, 'invalid');
    expect(await auth.attempt(remote, 'ok')).toMatchObject({
      reason: 'rate_limited',
      error: authRateLimitedError(300_000),
    });
  });

  it('answers a refusing store with the unavailable shape and close code 1013, not a lockout', () => {
    const failing: Decision = {
      allowed: false,
      reason: 'store-error',
      limit: 10,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 0,
      key: REMOTE_IP,
    };
    const broken = { ...createFailureLimiter(), check: () => failing };
    const auth = createConnectAuth({ limiter: broken, browserLimiter: broken });
    expect(auth.attempt(request(REMOTE_IP), 'ok')).toStrictEqual({
      ok: false,
      reason: 'unavailable',
      error: storeUnavailableError(),
      closeCode: 1013,
      closeReason: 'rate limiter unavailable; retry later',
      decision: failing,
    });
  });
});

describe('createConnectAuth: refuse', () => {
  const { attempt } = setup();
  const refusal = (() => {
    const result = attempt(request(REMOTE_IP), 'invalid');
    if (result.ok) throw new Error('unreachable');
    return result;
  })();
  const socket = (readyState: number) => ({ readyState, send: vi.fn(), close: vi.fn() });

  it('sends the error as a JSON frame and closes with the code and reason', () => {
    const ws = socket(1);
    createConnectAuth().refuse(ws, refusal);
    expect(ws.send).toHaveBeenCalledWith(JSON.stringify(authFailedError('invalid')));
    expect(ws.close).toHaveBeenCalledWith(1008, 'unauthorized: invalid credentials');
    expect(ws.send.mock.invocationCallOrder[0]).toBeLessThan(
      ws.close.mock.invocationCallOrder[0] ?? 0,
    );
  });

  it('wraps the error in the protocol envelope it is given', () => {
    const ws = socket(1);
    createConnectAuth().refuse(ws, refusal, (error, r) => ({
      type: 'res',
      id: 'connect-1',
      ok: false,
      error,
      reason: r.reason,
    }));
    expect(JSON.parse(ws.send.mock.calls[0]?.[0] as string)).toStrictEqual({
      type: 'res',
      id: 'connect-1',
      ok: false,
      error: authFailedError('invalid'),
      reason: 'invalid',
    });
  });

  it.each([
    [0, false, true],
    [2, false, false],
    [3, false, false],
  ])('with readyState %i sends a frame: %s, closes: %s', (readyState, sends, closes) => {
    const ws = socket(readyState);
    createConnectAuth().refuse(ws, refusal);
    expect(ws.send).toHaveBeenCalledTimes(sends ? 1 : 0);
    expect(ws.close).toHaveBeenCalledTimes(closes ? 1 : 0);
  });

  it('rejects an accepted result', () => {
    const accepted = attempt(request(REMOTE_IP), 'ok');
    expect(() => createConnectAuth().refuse(socket(1), accepted as never)).toThrow(TypeError);
  });
});

describe('createConnectAuth: over a real WebSocket', () => {
  let server: http.Server | undefined;
  let wss: WebSocketServer | undefined;
  afterEach(async () => {
    if (server) await closeServer(server, wss);
    server = undefined;
  });

  interface Reply {
    readonly frame: unknown;
    readonly code: number;
    readonly reason: string;
  }

  /** Opens a client, sends the connect frame, returns the server's first frame and the close. */
  function connect(
    port: number,
    token: string | undefined,
    headers: Record<string, string>,
  ): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { headers });
      let frame: unknown;
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connect', token })));
      ws.on('message', (data) => {
        frame = JSON.parse(String(data));
        if ((frame as { ok?: boolean }).ok === true) ws.close(1000, 'done');
      });
      ws.on('close', (code, reason) => resolve({ frame, code, reason: String(reason) }));
      ws.on('error', reject);
    });
  }

  it('answers a flood with invalid frames, then the lockout frame, each followed by close 1008', async () => {
    const clock = manualClock();
    const auth = createConnectAuth({
      scope: 'shared-secret',
      trustedProxies: ['127.0.0.1'],
      clock,
      timers: clock,
    });
    server = http.createServer();
    wss = new WebSocketServer({ server });
    const accepted: IncomingMessage[] = [];
    // The gateway side, as the package README shows it.
    wss.on('connection', (ws, req) => {
      ws.once('message', async (data) => {
        const hello = JSON.parse(String(data)) as { token?: string };
        const result = await auth.attempt(req, tokenOutcome(hello.token));
        if (!result.ok)
          return auth.refuse(ws, result, (error) => ({ type: 'res', ok: false, error }));
        accepted.push(req);
        ws.send(JSON.stringify({ type: 'res', ok: true }));
      });
    });
    const port = await listen(server);
    const remote = { 'X-Forwarded-For': REMOTE_IP };

    for (let i = 1; i <= 10; i++) {
      expect(await connect(port, 'wrong', remote), `attempt ${i}`).toStrictEqual({
        frame: { type: 'res', ok: false, error: authFailedError('invalid') },
        code: 1008,
        reason: 'unauthorized: invalid credentials',
      });
    }
    const lockout = {
      frame: { type: 'res', ok: false, error: authRateLimitedError(300_000) },
      code: 1008,
      reason: LOCKED_REASON,
    };
    expect(await connect(port, 'wrong', remote)).toStrictEqual(lockout);
    expect(await connect(port, SECRET, remote)).toStrictEqual(lockout);
    expect(accepted).toHaveLength(0);

    expect(await connect(port, SECRET, { 'X-Forwarded-For': '203.0.113.99' })).toStrictEqual({
      frame: { type: 'res', ok: true },
      code: 1000,
      reason: 'done',
    });
    clock.advance(300_000);
    expect(await connect(port, SECRET, remote)).toMatchObject({ frame: { ok: true } });
    expect(accepted).toHaveLength(2);
  });
});

describe('createConnectAuth: configuration and lifetime', () => {
  it.each([
    [
      'verify (the frame is checked by the caller)',
      { verify: () => 'ok' },
      'ERR_PORTCULLIS_UNKNOWN_OPTION',
    ],
    ['an unknown option', { lockoutMS: 5 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
    [
      'both limiter and limiter options',
      { limiter: createFailureLimiter(), maxAttempts: 3 },
      'ERR_PORTCULLIS_LIMITER',
    ],
    ['a scope that is not a string', { scope: 42 }, 'ERR_PORTCULLIS_SCOPE'],
    ['options that are not an object', 'strict', 'ERR_PORTCULLIS_INVALID_OPTIONS'],
  ])('rejects %s', (_label, options, code) => {
    const create = () => createConnectAuth(options as never);
    expect(create).toThrow(PortcullisConfigError);
    expect(create).toThrow(expect.objectContaining({ code }));
  });

  it('closes the limiters it created, never the ones it was given', async () => {
    const given = createFailureLimiter();
    const close = vi.spyOn(given, 'close');
    const auth = createConnectAuth({ limiter: given });
    const browserClose = vi.spyOn(auth.browserLimiter, 'close');
    expect(auth.limiter).toBe(given);
    await auth.close();
    expect(close).not.toHaveBeenCalled();
    expect(browserClose).toHaveBeenCalledTimes(1);
    await given.close();
  });
});

describe('createConnectAuth rebuilt around the same limiter', () => {
  it('keeps browser lockouts across close(): a locked-out origin is still refused', async () => {
    const clock = manualClock(5_000);
    const limiter = createFailureLimiter({ clock, timers: clock });
    const page = request('127.0.0.1', { origin: 'http://app.localhost:5173' });
    const first = createConnectAuth({ limiter });
    for (let i = 0; i < 10; i++) await first.attempt(page, 'invalid');
    await first.close();
    clock.advance(2_000);
    const again = createConnectAuth({ limiter });
    expect(again.attempt(page, 'ok')).toEqual({
      ok: false,
      reason: 'rate_limited',
      error: authRateLimitedError(298_000),
      closeCode: 1008,
      closeReason: LOCKED_REASON,
      decision: expect.objectContaining({
        reason: 'locked',
        key: 'browser-origin:http://app.localhost:5173',
        retryAfterMs: 298_000,
      }),
    });
    // A CLI on the same machine is untouched.
    expect(again.attempt(request('127.0.0.1'), 'ok')).toMatchObject({ ok: true });
    await again.close();
    await limiter.close();
  });
});
