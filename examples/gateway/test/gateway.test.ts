// The reference gateway, limit by limit, with a manual clock: exact frames, bodies and headers.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  authRateLimitedError,
  methodRateLimitedError,
  sessionRateLimitMessage,
} from '@portcullis/core';
import { authFailedError } from '@portcullis/core/adapter';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type GatewayClient, openClient } from '../src/client.js';
import { REDACTED } from '../src/config.js';
import {
  HOOK_TOKEN,
  type Harness,
  PASSWORD,
  request,
  startGateway,
  TOKEN,
  testConfig,
} from './helpers.js';

let h: Harness | undefined;
const open: GatewayClient[] = [];

afterEach(async () => {
  for (const c of open.splice(0)) c.close();
  await h?.close();
  h = undefined;
});

async function start(options: Parameters<typeof startGateway>[0] = {}): Promise<Harness> {
  h = await startGateway(options);
  return h;
}

/** Connects with the right token as a loopback CLI (exempt) and keeps the socket for requests. */
async function cli(g: Harness, device?: string): Promise<GatewayClient> {
  const r = await connect(g.wsUrl, {
    auth: { token: TOKEN },
    ...(device !== undefined && { device: { id: device } }),
  });
  expect(r.frame.ok).toBe(true);
  open.push(r.client);
  return r.client;
}

const EVIL = 'http://evil.localhost:5173';

describe('first-frame auth (@portcullis/ws createConnectAuth)', () => {
  it('locks a browser page out after 10 wrong tokens: the exact frame, then close 1008', async () => {
    const g = await start();
    for (let i = 1; i <= 10; i++) {
      const r = await connect(g.wsUrl, {
        origin: EVIL,
        auth: { token: `wrong-${i}` },
        id: `a${i}`,
      });
      expect(r.frame).toEqual({
        type: 'res',
        id: `a${i}`,
        ok: false,
        error: authFailedError('invalid'),
      });
      expect(r.close).toEqual({ code: 1008, reason: 'unauthorized: invalid credentials' });
    }
    g.clock.advance(3_000);
    const locked = await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN }, id: 'right' });
    expect(JSON.stringify(locked.frame)).toBe(
      JSON.stringify({ type: 'res', id: 'right', ok: false, error: authRateLimitedError(297_000) }),
    );
    expect(locked.close).toEqual({
      code: 1008,
      reason: 'unauthorized: too many failed authentication attempts (retry later)',
    });
    // The lockout started on the 10th failure: one warning with code, scope and key, and one for
    // the page's site (every *.localhost page is the site `localhost`), whose budget it spent too.
    const warnings = g.logger.entries().filter((e) => e['code'] === 'AUTH_RATE_LIMITED');
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 'warn',
        limiter: 'auth-browser',
        scope: 'shared-secret',
        key: `browser-origin:${EVIL}`,
        lockoutMs: 300_000,
      }),
      expect.objectContaining({
        level: 'warn',
        limiter: 'auth-browser-site',
        scope: 'shared-secret',
        key: 'browser-site:localhost',
        lockoutMs: 300_000,
      }),
    ]);
    g.clock.advance(297_000);
    const after = await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN } });
    open.push(after.client);
    expect(after.frame).toMatchObject({ ok: true, payload: { type: 'hello-ok' } });
  });

  it('never locks out a direct-local CLI, and answers it hello-ok with exempt: true', async () => {
    const g = await start();
    for (let i = 0; i < 25; i++) {
      const r = await connect(g.wsUrl, { auth: { token: 'typo' } });
      expect(r.frame.error).toEqual(authFailedError('invalid'));
    }
    const r = await connect(g.wsUrl, { auth: { token: TOKEN }, id: 'ok' });
    open.push(r.client);
    expect(r.frame).toEqual({
      type: 'res',
      id: 'ok',
      ok: true,
      payload: {
        type: 'hello-ok',
        protocol: 1,
        server: { name: 'test-gateway' },
        connId: expect.stringMatching(/^c\d+$/),
        auth: { scope: 'shared-secret', exempt: true },
        methods: [
          'config.get',
          'config.patch',
          'config.apply',
          'plugins.setEnabled',
          'gateway.restart.request',
          'sessions.create',
          'ratelimit.lockouts',
          'ratelimit.unlock',
          'ratelimit.ban',
          'ratelimit.access',
          'ratelimit.allow',
          'ratelimit.deny',
          'ratelimit.unlist',
        ],
      },
    });
  });

  it('gives each browser origin its own bucket, and the origins of one site one more', async () => {
    const g = await start();
    for (let i = 0; i < 10; i++) await connect(g.wsUrl, { origin: EVIL, auth: { token: 'x' } });
    const other = await connect(g.wsUrl, {
      origin: 'https://app.example',
      auth: { token: TOKEN },
    });
    open.push(other.client);
    expect(other.frame.ok).toBe(true);
    // Another page of the same site (localhost): its site's budget is spent, so it is refused.
    const sameSite = await connect(g.wsUrl, {
      origin: 'http://app.localhost:3000',
      auth: { token: TOKEN },
    });
    expect(sameSite.frame.error?.details?.code).toBe('AUTH_RATE_LIMITED');
    // The same origin spelled differently is the same bucket (WHATWG origin).
    const same = await connect(g.wsUrl, {
      origin: 'HTTP://EVIL.localhost:5173',
      auth: { token: TOKEN },
    });
    expect(same.frame.error?.details?.code).toBe('AUTH_RATE_LIMITED');
  });

  it('keeps credential classes independent (shared-secret, password, device-token)', async () => {
    const g = await start();
    // A device gets a token on its first connect and can use it afterwards.
    const first = await connect(g.wsUrl, { auth: { token: TOKEN }, device: { id: 'laptop' } });
    first.client.close();
    const deviceToken = first.frame.payload.device.token as string;
    expect(first.frame.payload.device).toEqual({
      id: 'laptop',
      token: expect.stringMatching(/^dev_/),
    });

    for (let i = 0; i < 10; i++) {
      const r = await connect(g.wsUrl, { origin: EVIL, auth: { deviceToken: `dev_guess${i}` } });
      expect(r.frame.error).toEqual(authFailedError('invalid'));
    }
    const locked = await connect(g.wsUrl, { origin: EVIL, auth: { deviceToken } });
    expect(locked.frame.error).toEqual(authRateLimitedError(300_000));
    const password = await connect(g.wsUrl, { origin: EVIL, auth: { password: PASSWORD } });
    const token = await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN } });
    open.push(password.client, token.client);
    expect(password.frame.payload.auth).toEqual({ scope: 'password', exempt: false });
    expect(token.frame.payload.auth).toEqual({ scope: 'shared-secret', exempt: false });
    // The device token still works from a client that is not locked out.
    const device = await connect(g.wsUrl, { auth: { deviceToken } });
    open.push(device.client);
    expect(device.frame.payload).toMatchObject({
      auth: { scope: 'device-token' },
      device: { id: 'laptop' },
    });
  });

  it('keys a client behind a trusted proxy by its X-Forwarded-For address', async () => {
    const g = await start({ config: testConfig({ gateway: { trustedProxies: ['127.0.0.1'] } }) });
    const from = (ip: string) => ({ 'x-forwarded-for': `${ip}, 127.0.0.1` });
    for (let i = 0; i < 10; i++)
      await connect(g.wsUrl, { headers: from('203.0.113.9'), auth: { token: 'x' } });
    const locked = await connect(g.wsUrl, { headers: from('203.0.113.9'), auth: { token: TOKEN } });
    expect(locked.frame.error).toEqual(authRateLimitedError(300_000));
    const other = await connect(g.wsUrl, { headers: from('198.51.100.4'), auth: { token: TOKEN } });
    open.push(other.client);
    expect(other.frame.payload.auth).toEqual({ scope: 'shared-secret', exempt: false });
    expect(g.gateway.status().lockouts[0]?.active).toEqual([
      {
        scope: 'shared-secret',
        key: '203.0.113.9',
        untilMs: 300_000,
        layer: 'client',
        unlock: true,
      },
    ]);
  });

  it('refuses missing credentials and a first frame that is not connect, counting neither', async () => {
    const g = await start();
    for (let i = 0; i < 12; i++) {
      const r = await connect(g.wsUrl, { origin: EVIL, auth: {}, id: 'm' });
      expect(r.frame).toEqual({
        type: 'res',
        id: 'm',
        ok: false,
        error: authFailedError('missing'),
      });
      expect(r.close?.code).toBe(1008);
    }
    const c = await openClient(g.wsUrl, { origin: EVIL });
    const frame = await c.request('config.get');
    expect(frame).toEqual({
      type: 'res',
      id: 'r1',
      ok: false,
      error: {
        code: 'INVALID_REQUEST',
        message:
          'the first frame must be {"type":"req","id":…,"method":"connect","params":{"auth":…}}',
        retryable: false,
      },
    });
    expect(await c.closed).toEqual({ code: 1008, reason: 'connect required' });
    const ok = await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN } });
    open.push(ok.client);
    expect(ok.frame.ok).toBe(true);
  });

  it('closes a socket that sends no connect within 10 s (injected timers)', async () => {
    const g = await start();
    const early = await openClient(g.wsUrl);
    g.clock.advance(9_999);
    // Still open at 9 999 ms: the server answers its (credential-less) connect.
    const answer = await early.send({ type: 'req', id: 'late', method: 'connect', params: {} });
    expect(answer.error).toEqual(authFailedError('missing'));
    const idle = await openClient(g.wsUrl);
    g.clock.advance(10_000);
    expect(await idle.closed).toEqual({ code: 1008, reason: 'connect timeout' });
  });
});

describe('webhooks: POST /hooks/<name>', () => {
  const hook = (g: Harness, headers: Record<string, string>) =>
    request(`${g.url}/hooks/github`, { method: 'POST', headers, body: '{"a":1}' });

  it('401 for 20 failures (the 20th starts the lockout), a plain 429 with Retry-After from the 21st, a right token passes', async () => {
    const g = await start();
    for (let i = 1; i <= 20; i++) {
      const r = await hook(g, i % 2 ? {} : { authorization: 'Bearer nope' });
      expect([r.status, r.headers['content-type'], r.body]).toEqual([
        401,
        'text/plain; charset=utf-8',
        'Unauthorized',
      ]);
    }
    const limited = await hook(g, { 'x-portcullis-token': 'nope' });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(limited.body).toBe('Too Many Requests');
    // The lockout started on the 20th failure: one warning from the webhook limiter.
    expect(g.logger.entries().filter((e) => e['code'] === 'AUTH_RATE_LIMITED')).toEqual([
      expect.objectContaining({ level: 'warn', limiter: 'webhook', lockoutMs: 60_000 }),
    ]);
    g.clock.advance(30_500);
    expect((await hook(g, {})).headers['retry-after']).toBe('30');
    expect(g.logger.entries().filter((e) => e['code'] === 'WEBHOOK_RATE_LIMITED')).toHaveLength(2);

    const ok = await hook(g, { 'x-portcullis-token': HOOK_TOKEN });
    expect([ok.status, JSON.parse(ok.body)]).toEqual([202, { ok: true, hook: 'github', bytes: 7 }]);
    // The right token reset the counter.
    expect((await hook(g, { authorization: 'Bearer nope' })).status).toBe(401);
    const bearer = await hook(g, { authorization: `Bearer ${HOOK_TOKEN}` });
    expect(bearer.status).toBe(202);
  });

  it('answers other methods 405 and unknown paths 404', async () => {
    const g = await start();
    expect((await request(`${g.url}/hooks/github`)).status).toBe(405);
    expect((await request(`${g.url}/nowhere`)).status).toBe(404);
    expect((await request(`${g.url}/healthz`)).body).toBe('ok');
  });
});

describe('control-plane writes (@portcullis/rpc withMethodQuotas)', () => {
  it('refuses the 31st config.patch within 60 s with the exact UNAVAILABLE shape', async () => {
    const g = await start();
    const c = await cli(g, 'dev-1');
    for (let i = 1; i <= 30; i++) {
      const r = await c.request('config.patch', { patch: { gateway: { name: `n${i}` } } });
      expect(r.ok).toBe(true);
    }
    g.clock.advance(25_461);
    const refused = await c.request('config.patch', { patch: { gateway: { name: 'late' } } });
    expect(JSON.stringify(refused)).toBe(
      JSON.stringify({
        type: 'res',
        id: 'r31',
        ok: false,
        error: {
          code: 'UNAVAILABLE',
          message: 'rate limit exceeded for config.patch; retry after 35s',
          retryable: true,
          retryAfterMs: 34_539,
          details: { method: 'config.patch', limit: '30 per 60s' },
        },
      }),
    );
    expect(refused.error).toEqual(
      methodRateLimitedError('config.patch', 34_539, { limit: 30, windowMs: 60_000 }),
    );
    // The refused call changed nothing; reads are free; other methods have their own bucket.
    expect((await c.request('config.get')).payload.config.gateway.name).toBe('n30');
    expect((await c.request('plugins.setEnabled', { id: 'voice-call', enabled: true })).ok).toBe(
      true,
    );
    // Another device on the same IP has its own bucket.
    const other = await cli(g, 'dev-2');
    expect((await other.request('config.patch', { patch: {} })).ok).toBe(true);
    // A blocked bucket shows on the status board with its time left.
    expect(g.gateway.status().quotas[0]?.blocked).toEqual([
      { key: 'config.patch|dev-1|127.0.0.1', untilMs: 34_539 },
    ]);
    g.clock.advance(34_539);
    expect((await c.request('config.patch', { patch: {} })).ok).toBe(true);
  });

  it('config.get redacts secrets; config.apply keeps redacted secrets; invalid configs are refused', async () => {
    const g = await start();
    const c = await cli(g);
    const got = (await c.request('config.get')).payload;
    expect(got.config.gateway.auth).toMatchObject({ token: REDACTED, password: REDACTED });
    expect(got.config.hooks).toEqual({ token: REDACTED });
    got.config.gateway.name = 'renamed';
    const applied = await c.request('config.apply', { config: got.config });
    expect(applied.payload.config.gateway.name).toBe('renamed');
    expect(g.gateway.config().gateway.auth.token).toBe(TOKEN);

    const bad = await c.request('config.patch', {
      patch: { gateway: { auth: { rateLimit: { maxAttempts: 0 } } } },
    });
    expect(bad.error).toEqual({
      code: 'INVALID_REQUEST',
      message:
        'invalid config: gateway.auth.rateLimit.maxAttempts: createFailureLimiter: option "maxAttempts" must be an integer ≥ 1, got 0',
      retryable: false,
      details: {
        code: 'ERR_PORTCULLIS_MAX_ATTEMPTS',
        option: 'gateway.auth.rateLimit.maxAttempts',
      },
    });
    const unknown = await c.request('nope.nothing');
    expect(unknown.error).toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'unknown method: nope.nothing',
    });
    const connectAgain = await c.request('connect', { auth: { token: TOKEN } });
    expect(connectAgain.error?.message).toBe('already connected');
  });

  it('a patched token is in force for the next connect', async () => {
    const g = await start();
    const c = await cli(g);
    await c.request('config.patch', { patch: { gateway: { auth: { token: 'rotated' } } } });
    const old = await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN } });
    expect(old.frame.error).toEqual(authFailedError('invalid'));
    const fresh = await connect(g.wsUrl, { origin: EVIL, auth: { token: 'rotated' } });
    open.push(fresh.client);
    expect(fresh.frame.ok).toBe(true);
  });
});

describe('session creation (withSessionCreationLimit, 120 / 10 s)', () => {
  it('refuses the 121st new session with the exact message; re-opening a known id is free', async () => {
    const g = await start();
    const c = await cli(g);
    for (let i = 1; i <= 120; i++) {
      const r = await c.request('sessions.create', { sessionId: `s${i}` });
      expect(r.payload).toEqual({ sessionId: `s${i}`, created: true });
    }
    g.clock.advance(4_000);
    const refused = await c.request('sessions.create', { sessionId: 's121' });
    expect(refused.error).toEqual({
      code: 'UNAVAILABLE',
      message: 'ACP session creation rate limit exceeded for sessions.create; retry after 6s.',
      retryable: true,
    });
    expect(refused.error.message).toBe(sessionRateLimitMessage('sessions.create', 6_000));
    expect((await c.request('sessions.create', { sessionId: 's7' })).payload).toEqual({
      sessionId: 's7',
      created: false,
    });
    expect(g.gateway.status().sessions).toMatchObject({ used: 120, limit: 120, resetMs: 6_000 });
    g.clock.advance(6_000);
    expect((await c.request('sessions.create', { sessionId: 's121' })).ok).toBe(true);
    const generated = await c.request('sessions.create');
    expect(generated.payload).toEqual({ sessionId: expect.any(String), created: true });
    const badId = await c.request('sessions.create', { sessionId: 42 });
    expect(badId.error?.code).toBe('INVALID_REQUEST');
  });
});

describe('restart (createRestartScheduler via withRestartRequests)', () => {
  it('coalesces three requests into one restart, then applies the 30 s cooldown', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'portcullis-gateway-'));
    const file = join(dir, 'gateway.json');
    writeFileSync(file, JSON.stringify(testConfig()));
    try {
      const g = await start({ config: testConfig(), configPath: file });
      const c = await cli(g, 'ops');
      const ask = (reason: string, delayMs?: number) =>
        c.request('gateway.restart.request', { reason, ...(delayMs !== undefined && { delayMs }) });
      expect((await ask('a')).payload).toEqual({
        coalesced: false,
        delayMs: 2_000,
        cooldownMsApplied: 0,
      });
      g.clock.advance(500);
      expect((await ask('b')).payload).toEqual({
        coalesced: true,
        delayMs: 1_500,
        cooldownMsApplied: 0,
      });
      // An earlier request pulls the pending restart forward.
      expect((await ask('c', 1_000)).payload).toEqual({
        coalesced: true,
        delayMs: 1_000,
        cooldownMsApplied: 0,
      });
      // The file changed meanwhile: the restart re-reads it (the process is not restarted).
      writeFileSync(file, JSON.stringify(testConfig({ gateway: { name: 'reloaded' } })));
      const event = c.nextEvent('gateway.restarted', 5_000);
      g.clock.advance(1_000);
      expect((await event).payload).toEqual({
        restarts: 1,
        reasons: ['a', 'b', 'c'],
        configHash: expect.any(String),
      });
      expect(g.gateway.config().gateway.name).toBe('reloaded');
      expect(g.gateway.scheduler.pending()).toBeUndefined();

      g.clock.advance(10_000);
      expect((await ask('d')).payload).toEqual({
        coalesced: false,
        delayMs: 22_000,
        cooldownMsApplied: 20_000,
      });
      expect(g.gateway.status().restart).toMatchObject({
        restarts: 1,
        pending: { dueInMs: 22_000, reasons: ['d'] },
        lastAgoMs: 10_000,
        cooldownLeftMs: 20_000,
      });
      const bad = await ask('e', Number.NaN);
      expect(bad.error?.code).toBe('INVALID_REQUEST');
      const second = c.nextEvent('gateway.restarted', 5_000);
      g.clock.advance(22_000);
      expect((await second).payload).toMatchObject({ restarts: 2, reasons: ['d'] });
      const logged = g.logger.entries().filter((e) => e['event'] === 'gateway.restart');
      expect(logged.map((e) => e['reasons'])).toEqual([['a', 'b', 'c'], ['d']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('restart requests cost control-plane slots (30 / 60 s)', async () => {
    const g = await start();
    const c = await cli(g, 'ops');
    for (let i = 0; i < 30; i++) await c.request('gateway.restart.request', { reason: `r${i}` });
    const refused = await c.request('gateway.restart.request', { reason: 'r30' });
    expect(refused.error).toEqual(
      methodRateLimitedError('gateway.restart.request', 60_000, { limit: 30, windowMs: 60_000 }),
    );
  });
});

describe('status endpoints', () => {
  it('/status.json lists lockouts with time left, buckets against caps and the last refusals', async () => {
    const g = await start();
    for (let i = 0; i < 10; i++) await connect(g.wsUrl, { origin: EVIL, auth: { token: 'x' } });
    g.clock.advance(1_000);
    await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN } });
    const r = await request(`${g.url}/status.json`);
    expect(r.status).toBe(200);
    const s = JSON.parse(r.body);
    expect(s.lockouts.map((l: { limiter: string }) => l.limiter)).toEqual([
      'auth',
      'auth-browser',
      'webhook',
    ]);
    // The page's own lockout (from its store) and its site's (core's aggregate budget, learnt from
    // the lockout channel: its store is core's own).
    expect(s.lockouts[1]).toMatchObject({
      size: 1,
      maxEntries: 10_000,
      activeCount: 2,
      active: [
        {
          scope: 'shared-secret',
          key: `browser-origin:${EVIL}`,
          untilMs: 299_000,
          layer: 'client',
          unlock: true,
        },
        // The site budget's lockout: core's, which no unlock reaches (it ends on its own).
        {
          scope: 'shared-secret',
          key: 'browser-site:localhost',
          untilMs: 299_000,
          layer: 'client',
          unlock: false,
        },
      ],
    });
    expect(s.refused).toEqual([
      {
        seq: 3,
        at: 1_001_000,
        event: 'refused',
        limiter: 'auth-browser',
        scope: 'shared-secret',
        key: `browser-origin:${EVIL}`,
        reason: 'locked',
        retryAfterMs: 299_000,
        detail: 'connect refused: AUTH_RATE_LIMITED, close 1008',
      },
      {
        seq: 2,
        at: 1_000_000,
        event: 'lockout',
        limiter: 'auth-browser-site',
        scope: 'shared-secret',
        key: 'browser-site:localhost',
        reason: 'locked',
        retryAfterMs: 300_000,
      },
      {
        seq: 1,
        at: 1_000_000,
        event: 'lockout',
        limiter: 'auth-browser',
        scope: 'shared-secret',
        key: `browser-origin:${EVIL}`,
        reason: 'locked',
        retryAfterMs: 300_000,
      },
    ]);
  });

  it('counts decisions per second per limiter for the chart: allowed, refused, lockouts started', async () => {
    const g = await start();
    for (let i = 0; i < 10; i++) await connect(g.wsUrl, { origin: EVIL, auth: { token: 'x' } });
    await connect(g.wsUrl, { auth: {} }); // missing credentials: the limiter never sees them
    g.clock.advance(1_000);
    await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN } });
    await connect(g.wsUrl, { auth: { token: TOKEN } });
    const ops = await cli(g, 'ops');
    for (let i = 0; i < 31; i++) await ops.request('config.patch', { patch: {} });
    await ops.request('config.get'); // a read: not a control-plane decision
    for (const id of ['s1', 's2', 's1']) await ops.request('sessions.create', { sessionId: id });
    g.clock.advance(299_000);
    for (let i = 0; i < 2; i++)
      await request(`${g.url}/hooks/github`, {
        method: 'POST',
        headers: { 'x-portcullis-token': i === 0 ? HOOK_TOKEN : 'wrong' },
      });

    const { rates } = g.gateway.status();
    expect(rates.nowS).toBe(1_300);
    expect(rates.windowS).toBe(300);
    const by = Object.fromEntries(rates.limiters.map((l) => [l.limiter, l]));
    expect(Object.keys(by)).toEqual([
      'auth',
      'auth-browser',
      'webhook',
      'control-plane',
      'session-creation',
    ]);
    // Second 1000 (10 failures, the 10th starting the lockout) has left the 5-minute window.
    expect(by['auth-browser']).toMatchObject({
      title: 'Browser connections',
      totals: { allowed: 0, refused: 1, lockouts: 0 },
      points: [[1_001, 0, 1, 0]],
    });
    expect(by['auth']?.points).toEqual([[1_001, 2, 0, 0]]); // the loopback CLI twice
    expect(by['control-plane']?.points).toEqual([[1_001, 30, 1, 0]]);
    expect(by['session-creation']?.points).toEqual([[1_001, 2, 0, 0]]); // re-opening s1 is free
    expect(by['webhook']?.points).toEqual([[1_300, 2, 0, 0]]);

    g.clock.set(1_001_000); // back in time: second 1000 is in the window again
    const earlier = g.gateway.status().rates.limiters[1];
    expect(earlier?.points).toEqual([
      [1_000, 10, 0, 2], // the page's lockout and its site's
      [1_001, 0, 1, 0],
    ]);
  });

  it('serves /status with its data in the HTML: lockouts, countdowns, the chart', async () => {
    const g = await start();
    for (let i = 0; i < 10; i++) await connect(g.wsUrl, { origin: EVIL, auth: { token: 'x' } });
    g.clock.advance(1_000);
    await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN } });
    const page = await request(`${g.url}/status`);
    const html = page.body;
    expect(html).toContain('<span id="name">“test-gateway”</span>');
    const token = /<main id="board" data-now="1001000" data-unlock-token="([\w-]{43})">/.exec(
      html,
    )?.[1];
    expect(token).toBeDefined();
    // The lockout row, its key wrapping only after separators, its time left counting down, and
    // its unlock button (a form carrying the page's token).
    expect(html).toContain(
      `<tr data-limiter="auth-browser" data-scope="shared-secret" data-key="browser-origin:${EVIL}" data-layer="client"><td class="nowrap">shared-secret</td><td class="key">browser-<wbr>origin:<wbr>http://<wbr>evil.<wbr>localhost:<wbr>5173</td><td class="left" data-until="1300000" data-over="0:00">4:59</td><td class="act"><form class="unlock" method="post" action="/status/unlock"><input type="hidden" name="token" value="${token}"><input type="hidden" name="limiter" value="auth-browser"><input type="hidden" name="scope" value="shared-secret"><input type="hidden" name="key" value="browser-origin:${EVIL}"><button type="submit" title="lift this lockout now">unlock</button></form></td></tr>`,
    );
    // The site budget's row has no button.
    expect(html).toContain(
      '<td class="left" data-until="1300000" data-over="0:00">4:59</td><td class="act"></td></tr>',
    );
    // The refusal, with the time left of the wait it was told, not the wait itself.
    expect(html).toMatch(
      /<tr data-event="refused" data-limiter="auth-browser"[^>]*>.*<td class="left" data-until="1300000" data-over="over">4:59<\/td>/,
    );
    expect(html).toContain(
      '<div class="rate-row" data-limiter="auth-browser" data-allowed="10" data-refused="1" data-lockouts="2">',
    );
    expect(html).toContain('<rect class="lockout" x="298" y="0" width="1" height="4"></rect>');
    expect(html).not.toContain('__NONCE__');
    expect(html).not.toContain('/*VIEW*/');
    const csp = String(page.headers['content-security-policy']);
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(html).toContain(`<script nonce="${nonce}">`);
  });

  it('keeps only the last 50 refused decisions', async () => {
    const g = await start();
    for (let i = 0; i < 10; i++) await connect(g.wsUrl, { origin: EVIL, auth: { token: 'x' } });
    for (let i = 0; i < 60; i++) await connect(g.wsUrl, { origin: EVIL, auth: { token: 'x' } });
    const refused = g.gateway.status().refused;
    expect(refused).toHaveLength(50);
    expect(refused[0]?.seq).toBe(62); // 2 lockouts (the page's, its site's), then 60 refusals
    expect(refused[49]?.seq).toBe(13);
  });

  it('serves loopback clients without auth; others need the token, under the auth lockout', async () => {
    const g = await start();
    const page = await request(`${g.url}/status`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toMatch(/script-src 'nonce-[^']+'/);
    expect(page.body).toContain('<title>Portcullis gateway status</title>');

    // The operator's own browser on this machine reads it: a typed URL (Sec-Fetch-Site: none)
    // and the page's own requests (same-origin) are a browser's, never exempt from the limiters,
    // but they are who the page is for.
    for (const site of ['none', 'same-origin']) {
      const r = await request(`${g.url}/status.json`, { headers: { 'sec-fetch-site': site } });
      expect(r.status).toBe(200);
    }
    // A rebound DNS name, a proxy hop, a cross-origin page or another site's <img> or form (no
    // Origin, but Sec-Fetch-Site says where it comes from) is not "loopback".
    for (const headers of [
      { host: 'attacker.example:80' },
      { 'x-forwarded-for': '203.0.113.5' },
      { origin: 'http://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
    ]) {
      const r = await request(`${g.url}/status.json`, { headers });
      expect([r.status, JSON.parse(r.body)]).toEqual([401, authFailedError('missing')]);
    }
    const authed = await request(`${g.url}/status.json`, {
      headers: { host: 'gateway.example', authorization: `Bearer ${TOKEN}` },
    });
    expect(authed.status).toBe(200);
    for (let i = 0; i < 10; i++)
      await request(`${g.url}/status.json`, {
        headers: {
          host: 'gateway.example',
          'x-forwarded-for': '1.2.3.4',
          authorization: 'Bearer x',
        },
      });
    const locked = await request(`${g.url}/status.json`, {
      headers: {
        host: 'gateway.example',
        'x-forwarded-for': '1.2.3.4',
        authorization: `Bearer ${TOKEN}`,
      },
    });
    expect(locked.status).toBe(429);
    expect(locked.headers['retry-after']).toBe('300');
    expect(locked.body).toBe(JSON.stringify(authRateLimitedError(300_000)));
  });
});
