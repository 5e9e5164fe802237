import { once } from 'node:events';
import http, { type IncomingMessage } from 'node:http';
import net from 'node:net';
import { PassThrough } from 'node:stream';
import {
  type AuthOutcome,
  authRateLimitedError,
  createFailureLimiter,
  type Logger,
  PortcullisConfigError,
} from '@portcullis/core';
import { authFailedError } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocketServer } from 'ws';
import {
  closeServer,
  connectClient,
  deferred,
  type GuardOverrides,
  type Guarded,
  listen,
  queryToken,
  rawExchange,
  rawUpgrade,
  SECRET,
  settle,
  startGuarded,
  statuses,
  tokenOutcome,
  upgradeRequestText,
  upgradeWithToken,
} from '../test/harness.js';
import { guardUpgrade } from './index.js';

/** A remote client as seen through the trusted proxy on 127.0.0.1. */
const REMOTE = { 'X-Forwarded-For': '203.0.113.7' };
const BEHIND_PROXY = { trustedProxies: ['127.0.0.1'] };
const ORIGIN_A = 'http://a.example:3000';
const ORIGIN_B = 'http://b.example:3000';
const INVALID_BODY = JSON.stringify(authFailedError('invalid'));
const MISSING_BODY = JSON.stringify(authFailedError('missing'));

let running: Guarded[] = [];
async function start(overrides: GuardOverrides = {}): Promise<Guarded> {
  const guarded = await startGuarded(overrides);
  running.push(guarded);
  return guarded;
}
afterEach(async () => {
  await Promise.all(running.map((g) => g.close()));
  running = [];
});

const wrong =
  (g: Guarded, headers: Record<string, string> = {}) =>
  () =>
    upgradeWithToken(g.port, 'wrong', headers);

describe('guardUpgrade: the lockout over raw upgrade requests', () => {
  it('answers the 10th wrong token with 401 and the 11th with 429, the exact body, Retry-After: 300 and Connection: close', async () => {
    const g = await start(BEHIND_PROXY);
    for (let attempt = 1; attempt <= 10; attempt++) {
      const reply = await upgradeWithToken(g.port, 'wrong', REMOTE);
      expect(reply.status, `attempt ${attempt}`).toBe(401);
      expect(reply.statusMessage).toBe('Unauthorized');
      expect(reply.headers.connection).toBe('close');
      expect(reply.headers['retry-after']).toBeUndefined();
      expect(reply.body).toBe(INVALID_BODY);
    }
    const locked = await upgradeWithToken(g.port, 'wrong', REMOTE);
    expect(locked.status).toBe(429);
    expect(locked.statusMessage).toBe('Too Many Requests');
    expect(locked.headers['retry-after']).toBe('300');
    expect(locked.headers.connection).toBe('close');
    expect(locked.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(locked.headers['content-length']).toBe(String(Buffer.byteLength(locked.body)));
    expect(locked.body).toBe(JSON.stringify(authRateLimitedError(300_000)));
    expect(JSON.parse(locked.body)).toStrictEqual({
      code: 'INVALID_REQUEST',
      message: 'unauthorized: too many failed authentication attempts (retry later)',
      retryable: true,
      retryAfterMs: 300_000,
      details: {
        code: 'AUTH_RATE_LIMITED',
        authReason: 'rate_limited',
        recommendedNextStep: 'wait_then_retry',
      },
    });
    // Failure and lockout limiters never advertise counters.
    expect(
      Object.keys(locked.headers).filter((name) => name.toLowerCase().startsWith('ratelimit')),
    ).toEqual([]);
    expect(g.connections).toHaveLength(0);
    expect(g.refusals.map((r) => r.answer.status)).toEqual([...Array(10).fill(401), 429]);
  });

  it('writes the refusal as exact raw HTTP/1.1 bytes and closes the connection', async () => {
    const g = await start(BEHIND_PROXY);
    await statuses(10, wrong(g, REMOTE));
    const raw = await rawExchange(g.port, upgradeRequestText('/?token=wrong', REMOTE));
    const body = JSON.stringify(authRateLimitedError(300_000));
    expect(raw).toBe(
      'HTTP/1.1 429 Too Many Requests\r\n' +
        'Retry-After: 300\r\n' +
        'Content-Type: application/json; charset=utf-8\r\n' +
        'Connection: close\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        '\r\n' +
        body,
    );
  });

  it('refuses the correct token during the lockout, with Retry-After counting down, and accepts it afterwards', async () => {
    const g = await start(BEHIND_PROXY);
    await statuses(10, wrong(g, REMOTE));
    const refused = await upgradeWithToken(g.port, SECRET, REMOTE);
    expect(refused.status).toBe(429);

    g.clock.advance(1_500);
    const later = await upgradeWithToken(g.port, SECRET, REMOTE);
    expect(later.status).toBe(429);
    expect(later.headers['retry-after']).toBe('299');
    expect(later.body).toBe(JSON.stringify(authRateLimitedError(298_500)));
    expect(g.connections).toHaveLength(0);

    g.clock.advance(298_500);
    const client = await connectClient(`ws://127.0.0.1:${g.port}/?token=${SECRET}`, REMOTE);
    expect(client.opened).toBe(true);
    if (client.opened) client.ws.close();
    expect(g.connections).toHaveLength(1);
  });

  it('never counts a missing token, before or during a lockout', async () => {
    const g = await start(BEHIND_PROXY);
    for (let i = 0; i < 25; i++) {
      const reply = await upgradeWithToken(g.port, undefined, REMOTE);
      expect(reply.status).toBe(401);
      expect(reply.body).toBe(MISSING_BODY);
    }
    expect(await statuses(10, wrong(g, REMOTE))).toEqual(Array(10).fill(401));
    expect((await upgradeWithToken(g.port, 'wrong', REMOTE)).status).toBe(429);
    // Missing credentials are not even checked against the limiter: still a plain 401.
    const missing = await upgradeWithToken(g.port, undefined, REMOTE);
    expect(missing.status).toBe(401);
    expect(missing.body).toBe(MISSING_BODY);
    expect(missing.headers['retry-after']).toBeUndefined();
  });

  it('resets the count after a correct token', async () => {
    const g = await start(BEHIND_PROXY);
    await statuses(9, wrong(g, REMOTE));
    expect((await upgradeWithToken(g.port, SECRET, REMOTE)).status).toBe(101);
    expect(await statuses(10, wrong(g, REMOTE))).toEqual(Array(10).fill(401));
    expect((await upgradeWithToken(g.port, 'wrong', REMOTE)).status).toBe(429);
  });

  it('never locks out a loopback CLI client that sends no Origin', async () => {
    const g = await start();
    expect(await statuses(30, wrong(g))).toEqual(Array(30).fill(401));
    expect(g.refusals.every((r) => r.decision?.reason === 'exempt')).toBe(true);
    const client = await connectClient(`ws://127.0.0.1:${g.port}/?token=${SECRET}`);
    expect(client).toMatchObject({ opened: true, firstMessage: 'welcome' });
    if (client.opened) client.ws.close();
  });

  it('gives each browser origin on loopback its own bucket, keyed by the normalised origin', async () => {
    const g = await start();
    expect(await statuses(10, wrong(g, { Origin: ORIGIN_A }))).toEqual(Array(10).fill(401));
    expect((await upgradeWithToken(g.port, 'wrong', { Origin: ORIGIN_A })).status).toBe(429);
    expect(g.refusals.at(-1)?.decision?.key).toBe('browser-origin:http://a.example:3000');
    // The same origin spelled differently is the same bucket; the right token does not help.
    expect(
      (await upgradeWithToken(g.port, SECRET, { Origin: 'HTTP://A.Example:3000' })).status,
    ).toBe(429);

    expect((await upgradeWithToken(g.port, 'wrong', { Origin: ORIGIN_B })).status).toBe(401);
    expect((await upgradeWithToken(g.port, SECRET, { Origin: ORIGIN_B })).status).toBe(101);
    // Non-browser loopback clients have their own budget and stay exempt.
    expect((await upgradeWithToken(g.port, SECRET)).status).toBe(101);
    expect(g.connections).toHaveLength(2);
  });

  it('keys a browser on a non-loopback client by its IP, apart from non-browser attempts', async () => {
    const g = await start(BEHIND_PROXY);
    await statuses(10, wrong(g, { ...REMOTE, Origin: ORIGIN_A }));
    expect((await upgradeWithToken(g.port, 'wrong', { ...REMOTE, Origin: ORIGIN_A })).status).toBe(
      429,
    );
    expect(g.refusals.at(-1)?.decision?.key).toBe('203.0.113.7');
    // Another origin from the same IP shares the IP's bucket.
    expect((await upgradeWithToken(g.port, SECRET, { ...REMOTE, Origin: ORIGIN_B })).status).toBe(
      429,
    );
    // Another IP, same origin: its own bucket.
    expect(
      (
        await upgradeWithToken(g.port, 'wrong', {
          'X-Forwarded-For': '203.0.113.8',
          Origin: ORIGIN_A,
        })
      ).status,
    ).toBe(401);
    // The same IP without Origin uses the non-browser limiter: an untouched budget.
    expect((await upgradeWithToken(g.port, 'wrong', REMOTE)).status).toBe(401);
    expect((await upgradeWithToken(g.port, SECRET, REMOTE)).status).toBe(101);
  });

  it('keys a proxied client by the right-most untrusted X-Forwarded-For hop', async () => {
    const g = await start({ trustedProxies: ['127.0.0.1', '10.0.0.0/8'] });
    for (let i = 0; i < 10; i++) {
      // Hops left of the client are client-supplied: changing them must not dodge the limit.
      const reply = await upgradeWithToken(g.port, 'wrong', {
        'X-Forwarded-For': `198.51.100.${i}, 203.0.113.9, 10.1.2.3`,
      });
      expect(reply.status).toBe(401);
    }
    expect(
      (await upgradeWithToken(g.port, 'wrong', { 'X-Forwarded-For': '203.0.113.9' })).status,
    ).toBe(429);
    expect(g.refusals.at(-1)?.decision?.key).toBe('203.0.113.9');
    expect(
      (await upgradeWithToken(g.port, 'wrong', { 'X-Forwarded-For': '198.51.100.1' })).status,
    ).toBe(401);
    // The proxy itself sent no X-Forwarded-For: unresolved, the shared non-exempt `unknown` bucket.
    expect((await upgradeWithToken(g.port, 'wrong')).status).toBe(401);
    expect(g.refusals.at(-1)?.decision?.key).toBe('unknown');
  });

  it('limits a loopback peer that sends X-Forwarded-For without being trusted under its own address', async () => {
    const logger: Logger = { warn: vi.fn(), error: vi.fn() };
    const g = await start({ logger });
    expect(await statuses(10, wrong(g, REMOTE))).toEqual(Array(10).fill(401));
    expect((await upgradeWithToken(g.port, SECRET, REMOTE)).status).toBe(429);
    expect(g.refusals.at(-1)?.decision?.key).toBe('127.0.0.1');
    // One warning about the spoofing peer, one about the lockout it earned (the gate's logger
    // reaches its limiters too).
    const codes = vi.mocked(logger.warn).mock.calls.map((c) => (c[0] as { code: string }).code);
    expect(codes).toEqual(['PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY', 'AUTH_RATE_LIMITED']);
    expect(logger.warn).toHaveBeenCalledWith(
      { code: 'PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY' },
      expect.any(String),
    );
    // A clean direct-local client is still exempt.
    expect((await upgradeWithToken(g.port, SECRET)).status).toBe(101);
  });

  it('keeps credential classes apart when two guards share one limiter', async () => {
    const clock = manualClock();
    const limiter = createFailureLimiter({ clock, timers: clock });
    const secret = await start({ ...BEHIND_PROXY, limiter, scope: 'shared-secret' });
    const device = await start({ ...BEHIND_PROXY, limiter, scope: 'device-token' });
    await statuses(10, wrong(secret, REMOTE));
    expect((await upgradeWithToken(secret.port, 'wrong', REMOTE)).status).toBe(429);
    expect((await upgradeWithToken(device.port, 'wrong', REMOTE)).status).toBe(401);
    expect((await upgradeWithToken(device.port, SECRET, REMOTE)).status).toBe(101);
    await limiter.close();
  });

  it('works the same with an async verify', async () => {
    const g = await start({
      ...BEHIND_PROXY,
      verify: async (req) => tokenOutcome(queryToken(req)),
    });
    expect(await statuses(10, wrong(g, REMOTE))).toEqual(Array(10).fill(401));
    const locked = await upgradeWithToken(g.port, SECRET, REMOTE);
    expect(locked.status).toBe(429);
    expect(locked.body).toBe(JSON.stringify(authRateLimitedError(300_000)));
    expect((await upgradeWithToken(g.port, SECRET)).status).toBe(101);
  });
});

describe('guardUpgrade: hand-over to the WebSocketServer', () => {
  it('emits connection, then calls onAuthenticated, for an accepted upgrade only', async () => {
    const order: string[] = [];
    const g = await start({
      onAuthenticated: (ws, req) => order.push(`authenticated ${req.url} ${ws.readyState}`),
    });
    g.wss.on('connection', (_ws, req) => order.push(`connection ${req.url}`));
    await statuses(3, wrong(g));
    await upgradeWithToken(g.port, undefined);
    expect(order).toEqual([]);
    const client = await connectClient(`ws://127.0.0.1:${g.port}/?token=${SECRET}`);
    expect(client.opened).toBe(true);
    if (client.opened) client.ws.close();
    expect(order).toEqual([`connection /?token=${SECRET}`, `authenticated /?token=${SECRET} 1`]);
  });

  it('refuses a real ws client with the raw status and never emits connection', async () => {
    const g = await start(BEHIND_PROXY);
    const results = [];
    for (let i = 0; i < 11; i++)
      results.push(await connectClient(`ws://127.0.0.1:${g.port}/?token=wrong`, REMOTE));
    expect(results).toEqual([
      ...Array(10).fill({ opened: false, status: 401 }),
      { opened: false, status: 429 },
    ]);
    expect(g.connections).toHaveLength(0);
    expect(g.wss.clients.size).toBe(0);
  });

  it('decides synchronously when verify and the store are synchronous', () => {
    const clock = manualClock();
    const server = http.createServer();
    const wss = new WebSocketServer({ noServer: true });
    const handleUpgrade = vi.spyOn(wss, 'handleUpgrade').mockImplementation(() => undefined);
    guardUpgrade(server, wss, {
      verify: (req) => tokenOutcome(queryToken(req)),
      clock,
      timers: clock,
    });
    const fakeRequest = (url: string) =>
      ({
        url,
        method: 'GET',
        headers: {},
        socket: { remoteAddress: '203.0.113.7' },
      }) as unknown as IncomingMessage;

    const refused = new PassThrough();
    server.emit('upgrade', fakeRequest('/?token=wrong'), refused, Buffer.alloc(0));
    expect(refused.writableEnded).toBe(true);
    expect(String(refused.read())).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n/);

    const accepted = new PassThrough();
    server.emit('upgrade', fakeRequest(`/?token=${SECRET}`), accepted, Buffer.alloc(0));
    expect(handleUpgrade).toHaveBeenCalledTimes(1);
    expect(handleUpgrade.mock.calls[0]?.[1]).toBe(accepted);
    // Handed over: the guard's listeners are gone from the socket.
    expect(accepted.listenerCount('error')).toBe(0);
    expect(accepted.listenerCount('close')).toBe(0);
  });

  it.each([
    ['closes (FIN)', 'destroy', 'ok'],
    ['closes (FIN)', 'destroy', 'invalid'],
    ['resets (RST)', 'resetAndDestroy', 'ok'],
    ['resets (RST)', 'resetAndDestroy', 'invalid'],
  ] as const)(
    'answers nothing and leaks nothing when the client %s while an async verify is pending (%s → %s)',
    async (_label, how, outcome) => {
      const pending = deferred<AuthOutcome>();
      const reached = deferred<net.Socket>();
      const g = await start({
        verify: (req) => {
          reached.resolve(req.socket);
          return pending.promise;
        },
      });
      const client = net.connect(g.port, '127.0.0.1');
      client.on('error', () => undefined);
      const received: Buffer[] = [];
      client.on('data', (chunk: Buffer) => received.push(chunk));
      await once(client, 'connect');
      client.write(upgradeRequestText(`/?token=${outcome === 'ok' ? SECRET : 'wrong'}`));
      const serverSocket = await reached.promise;
      // (events.once would reject on the reset's 'error', which the guard handles.)
      const gone = new Promise((resolve) =>
        serverSocket.once(how === 'destroy' ? 'end' : 'close', resolve),
      );
      client[how]();
      await gone;

      pending.resolve(outcome);
      await settle();
      expect(serverSocket.destroyed).toBe(true);
      expect(serverSocket.listenerCount('error')).toBe(0);
      expect(serverSocket.listenerCount('close')).toBe(0);
      expect(received).toEqual([]);
      expect(g.connections).toHaveLength(0);
      expect(g.refusals).toHaveLength(0);
      expect(g.wss.clients.size).toBe(0);
      expect(await new Promise((resolve) => g.server.getConnections((_e, n) => resolve(n)))).toBe(
        0,
      );
    },
  );

  it('answers 500 and logs when verify throws or rejects, without emitting connection', async () => {
    const logger: Logger = { warn: vi.fn(), error: vi.fn() };
    const boom = new Error('verify exploded');
    let calls = 0;
    const g = await start({
      logger,
      verify: () => {
        calls++;
        if (calls === 1) throw boom;
        return Promise.reject(boom);
      },
    });
    for (let i = 0; i < 2; i++) {
      const reply = await upgradeWithToken(g.port, SECRET);
      expect(reply.status).toBe(500);
      expect(reply.body).toBe('Internal Server Error');
      expect(reply.headers.connection).toBe('close');
    }
    expect(logger.error).toHaveBeenCalledTimes(2);
    expect(logger.error).toHaveBeenCalledWith(
      { code: 'PORTCULLIS_UPGRADE_ERROR', err: boom },
      expect.any(String),
    );
    expect(g.connections).toHaveLength(0);
  });

  it('answers 400 to a path its WebSocketServer does not serve, without checking or counting it', async () => {
    const verify = vi.fn((req: IncomingMessage) => tokenOutcome(queryToken(req)));
    const g = await start({ path: '/ws', verify });
    const reply = await rawUpgrade(g.port, { path: '/elsewhere?token=wrong' });
    expect(reply.status).toBe(400);
    expect(reply.headers.connection).toBe('close');
    expect(verify).not.toHaveBeenCalled();
    expect((await rawUpgrade(g.port, { path: `/ws?token=${SECRET}` })).status).toBe(101);
  });

  it('leaves another path to the next guarded WebSocketServer on the same HTTP server', async () => {
    const g = await start({ path: '/ws' });
    const other = new WebSocketServer({ noServer: true, path: '/admin' });
    const adminConnections: string[] = [];
    other.on('connection', (_ws, req) => adminConnections.push(req.url ?? ''));
    const adminVerify = vi.fn(() => 'ok' as const);
    guardUpgrade(g.server, other, { verify: adminVerify });
    expect((await rawUpgrade(g.port, { path: '/admin' })).status).toBe(101);
    expect((await rawUpgrade(g.port, { path: `/ws?token=${SECRET}` })).status).toBe(101);
    expect(adminVerify).toHaveBeenCalledTimes(1);
    expect(adminConnections).toEqual(['/admin']);
    expect(g.connections.map((req) => req.url)).toEqual([`/ws?token=${SECRET}`]);
    for (const ws of other.clients) ws.terminate();
  });

  it('returns a function that detaches the listener (once)', async () => {
    const server = http.createServer();
    const wss = new WebSocketServer({ noServer: true });
    const before = server.listenerCount('upgrade');
    const verify = vi.fn(() => 'ok' as const);
    const detach = guardUpgrade(server, wss, { verify });
    expect(server.listenerCount('upgrade')).toBe(before + 1);
    detach();
    detach();
    expect(server.listenerCount('upgrade')).toBe(before);
    // What comes now goes to whoever listens instead.
    const seen = deferred<string>();
    server.on('upgrade', (req: IncomingMessage, socket: net.Socket) => {
      seen.resolve(req.url ?? '');
      socket.destroy();
    });
    const port = await listen(server);
    await rawUpgrade(port, { path: '/after' }).catch(() => undefined);
    expect(await seen.promise).toBe('/after');
    expect(verify).not.toHaveBeenCalled();
    await closeServer(server);
  });
});

describe('guardUpgrade: configuration', () => {
  const server = http.createServer();
  const wss = new WebSocketServer({ noServer: true });
  const verify = () => 'ok' as const;

  it.each([
    ['missing verify', {}, 'ERR_PORTCULLIS_VERIFY'],
    ['an unknown option', { verify, maxAttempt: 3 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
    [
      'both limiter and options',
      { verify, limiter: createFailureLimiter(), maxAttempts: 3 },
      'ERR_PORTCULLIS_LIMITER',
    ],
    [
      'a non-function onAuthenticated',
      { verify, onAuthenticated: 'yes' },
      'ERR_PORTCULLIS_ON_AUTHENTICATED',
    ],
    ['a non-function onRefused', { verify, onRefused: 1 }, 'ERR_PORTCULLIS_ON_REFUSED'],
    ['trustedProxies: true', { verify, trustedProxies: true }, 'ERR_PORTCULLIS_TRUSTED_PROXIES'],
    ['a bad limiter option', { verify, maxAttempts: 0 }, 'ERR_PORTCULLIS_MAX_ATTEMPTS'],
  ])('rejects %s at construction, attaching nothing', (_label, options, code) => {
    const before = server.listenerCount('upgrade');
    const attach = () => guardUpgrade(server, wss, options as never);
    expect(attach).toThrow(PortcullisConfigError);
    expect(attach).toThrow(expect.objectContaining({ code }));
    expect(server.listenerCount('upgrade')).toBe(before);
  });

  it('rejects a WebSocketServer that answers upgrades itself', () => {
    const own = http.createServer();
    const attached = new WebSocketServer({ server: own });
    expect(() => guardUpgrade(own, attached, { verify })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_WSS' }),
    );
    attached.close();
  });

  it('rejects something that is not a server', () => {
    expect(() => guardUpgrade({} as never, wss, { verify })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_SERVER' }),
    );
    expect(() => guardUpgrade(server, {} as never, { verify })).toThrow(
      expect.objectContaining({ code: 'ERR_PORTCULLIS_WSS' }),
    );
  });
});

describe('guardUpgrade: user hooks that fail', () => {
  it('a throwing or rejecting onRefused/onAuthenticated is logged, never a crash', async () => {
    const logger: Logger = { warn: vi.fn(), error: vi.fn() };
    const g = await start({
      logger,
      verify: async (req) => tokenOutcome(queryToken(req)),
      onRefused: (req) => {
        if (req.url?.includes('async')) return Promise.reject(new Error('refused hook rejected'));
        throw new Error('refused hook threw');
      },
      onAuthenticated: () => {
        throw new Error('authenticated hook threw');
      },
    });
    const crashes: unknown[] = [];
    const onCrash = (e: unknown) => crashes.push(e);
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);
    try {
      expect((await upgradeWithToken(g.port, 'wrong')).status).toBe(401);
      expect((await rawUpgrade(g.port, { path: '/?async=1&token=wrong' })).status).toBe(401);
      const ok = await connectClient(`ws://127.0.0.1:${g.port}/?token=${SECRET}`);
      expect(ok.opened).toBe(true);
      if (ok.opened) ok.ws.terminate();
      await settle();
      await settle();
    } finally {
      process.off('uncaughtException', onCrash);
      process.off('unhandledRejection', onCrash);
    }
    expect(crashes).toEqual([]);
    const messages = vi
      .mocked(logger.error)
      .mock.calls.map((c) => [(c[0] as { code: string; err: Error }).err.message, c[1]]);
    expect(messages).toEqual([
      ['refused hook threw', 'Portcullis guardUpgrade: onRefused threw or rejected'],
      ['refused hook rejected', 'Portcullis guardUpgrade: onRefused threw or rejected'],
      ['authenticated hook threw', 'Portcullis guardUpgrade: onAuthenticated threw or rejected'],
    ]);
    // One code for every failed hook, in every package; the hook is named.
    expect(vi.mocked(logger.error).mock.calls.map((c) => c[0])).toEqual([
      expect.objectContaining({ code: 'PORTCULLIS_HOOK_ERROR', hook: 'onRefused' }),
      expect.objectContaining({ code: 'PORTCULLIS_HOOK_ERROR', hook: 'onRefused' }),
      expect.objectContaining({ code: 'PORTCULLIS_HOOK_ERROR', hook: 'onAuthenticated' }),
    ]);
  });

  it('without a logger a failed hook is a process warning with the hook-error code', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const g = await start({
        onRefused: () => {
          throw new Error('refused hook threw');
        },
      });
      expect((await upgradeWithToken(g.port, 'wrong')).status).toBe(401);
      await settle();
      expect(warn).toHaveBeenCalledWith(
        'Portcullis guardUpgrade: onRefused threw or rejected: Error: refused hook threw',
        { code: 'PORTCULLIS_HOOK_ERROR' },
      );
    } finally {
      warn.mockRestore();
    }
  });
});
