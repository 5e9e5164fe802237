// What an operator can do about lockouts: the admin RPC methods (ratelimit.lockouts, .unlock,
// .ban: operator only, each a control-plane write with its own quota bucket) and the /status
// unlock button's POST /status/unlock (same origin, the page's token). Clients to lock out connect
// through a trusted proxy hop on loopback, so each is keyed by its X-Forwarded-For address and is
// not exempt. The gateway's clock is manual: it starts at 1 000 000.
import { authRateLimitedError, methodRateLimitedError } from '@portcullis/core';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type GatewayClient } from '../src/client.js';
import { type Harness, request, startGateway, TOKEN, testConfig } from './helpers.js';

let h: Harness | undefined;
const open: GatewayClient[] = [];

afterEach(async () => {
  for (const c of open.splice(0)) c.close();
  await h?.close();
  h = undefined;
});

const ATTACKER = '203.0.113.9';
const LAYER_NAMES = ['auth.pair', 'auth.account', 'auth.spray', 'auth.scope'];
const from = (ip: string) => ({ 'x-forwarded-for': `${ip}, 127.0.0.1` });

async function start(): Promise<Harness> {
  h = await startGateway({ config: testConfig({ gateway: { trustedProxies: ['127.0.0.1'] } }) });
  return h;
}

/** Ten wrong tokens from `ip`: locked out (shared-secret) on the 10th. */
async function lockOut(g: Harness, ip = ATTACKER): Promise<void> {
  for (let i = 0; i < 10; i++)
    await connect(g.wsUrl, { headers: from(ip), auth: { token: `guess-${i}` } });
  const r = await connect(g.wsUrl, { headers: from(ip), auth: { token: TOKEN } });
  expect(r.frame.error?.details?.code).toBe('AUTH_RATE_LIMITED');
}

/** A connection with the right token (an operator), kept open for requests. */
async function operator(g: Harness, device = 'ops-laptop'): Promise<GatewayClient> {
  const r = await connect(g.wsUrl, { auth: { token: TOKEN }, device: { id: device } });
  expect(r.frame.ok).toBe(true);
  open.push(r.client);
  return r.client;
}

/** Whether `ip` logs in with the right token now (the socket is closed again). */
async function logsIn(g: Harness, ip: string): Promise<boolean> {
  const r = await connect(g.wsUrl, { headers: from(ip), auth: { token: TOKEN } });
  r.client.close();
  return r.frame.ok === true;
}

describe('admin RPC methods', () => {
  it('lists the lockouts in force soonest first, unlocks one, and the client logs in again', async () => {
    const g = await start();
    await lockOut(g);
    g.clock.advance(10_000);
    await lockOut(g, '198.51.100.4');
    const ops = await operator(g);
    const listed = await ops.request('ratelimit.lockouts');
    expect(listed.payload).toEqual({
      lockouts: [
        {
          limiter: 'auth',
          scope: 'shared-secret',
          key: ATTACKER,
          layer: 'client',
          until: 1_300_000,
          retryAfterMs: 290_000,
        },
        {
          limiter: 'auth',
          scope: 'shared-secret',
          key: '198.51.100.4',
          layer: 'client',
          until: 1_310_000,
          retryAfterMs: 300_000,
        },
      ],
      truncated: false,
    });
    // The IPv4-mapped spelling names the same subject.
    const unlocked = await ops.request('ratelimit.unlock', {
      limiter: 'auth',
      key: `::ffff:${ATTACKER}`,
    });
    expect(unlocked.payload).toEqual({
      limiter: 'auth',
      key: ATTACKER,
      unlocked: ['shared-secret'],
    });
    expect(await logsIn(g, ATTACKER)).toBe(true);
    expect(await logsIn(g, '198.51.100.4')).toBe(false);
    const after = await ops.request('ratelimit.lockouts', { limiter: 'auth', limit: 5 });
    expect(after.payload.lockouts.map((l: { key: string }) => l.key)).toEqual(['198.51.100.4']);
    // Unlocking what is not locked is not an error: it says nothing was.
    const again = await ops.request('ratelimit.unlock', {
      limiter: 'auth',
      key: ATTACKER,
      scope: 'password',
    });
    expect(again.payload).toEqual({ limiter: 'auth', key: ATTACKER, unlocked: [] });
    expect(g.logger.entries().find((l) => l['event'] === 'ratelimit.unlock')).toMatchObject({
      level: 'warn',
      limiter: 'auth',
      key: ATTACKER,
      scopes: ['shared-secret', 'password', 'device-token'],
      unlocked: ['shared-secret'],
      via: 'rpc',
      deviceId: 'ops-laptop',
    });
  });

  it('bans by hand in every credential class: refused like an earned lockout, listed as a ban', async () => {
    const g = await start();
    const ops = await operator(g);
    const banned = await ops.request('ratelimit.ban', {
      limiter: 'auth',
      key: '2001:db8:1:2::99',
      ms: 60_000,
    });
    // An IPv6 client is keyed by its /64.
    expect(banned.payload).toEqual({
      limiter: 'auth',
      key: '2001:db8:1:2::/64',
      banned: [
        { scope: 'shared-secret', retryAfterMs: 60_000 },
        { scope: 'password', retryAfterMs: 60_000 },
        { scope: 'device-token', retryAfterMs: 60_000 },
      ],
    });
    const refused = await connect(g.wsUrl, {
      headers: from('2001:db8:1:2::5'),
      auth: { token: TOKEN },
    });
    // The same answer as an earned lockout: the client cannot tell a ban apart.
    expect(refused.frame.error).toEqual(authRateLimitedError(60_000));
    const listed = await ops.request('ratelimit.lockouts', { scope: 'password' });
    expect(listed.payload.lockouts).toEqual([
      {
        limiter: 'auth',
        scope: 'password',
        key: '2001:db8:1:2::/64',
        layer: 'ban',
        until: 1_060_000,
        retryAfterMs: 60_000,
      },
    ]);
    // The status board tells a ban apart too.
    expect(g.gateway.status().lockouts[0]?.active).toContainEqual({
      scope: 'shared-secret',
      key: '2001:db8:1:2::/64',
      untilMs: 60_000,
      layer: 'ban',
      unlock: true,
    });
    g.clock.advance(60_000);
    expect(await logsIn(g, '2001:db8:1:2::5')).toBe(true);
  });

  it('bans a webhook sender: a plain 429 with Retry-After, whatever the token', async () => {
    const g = await start();
    const ops = await operator(g);
    const banned = await ops.request('ratelimit.ban', {
      limiter: 'webhook',
      key: ATTACKER,
      ms: 90_000,
    });
    expect(banned.payload).toEqual({
      limiter: 'webhook',
      key: ATTACKER,
      banned: [{ scope: 'default', retryAfterMs: 90_000 }],
    });
    const r = await request(`${g.url}/hooks/deploy`, {
      method: 'POST',
      headers: { ...from(ATTACKER), authorization: 'Bearer wrong' },
      body: '{}',
    });
    expect([r.status, r.headers['retry-after'], r.body]).toEqual([429, '90', 'Too Many Requests']);
  });

  it('refuses a device-token connection before its quota is spent (OPERATOR_REQUIRED)', async () => {
    const g = await start();
    const first = await connect(g.wsUrl, { auth: { token: TOKEN }, device: { id: 'phone' } });
    first.client.close();
    const deviceToken = first.frame.payload.device.token as string;
    const device = await connect(g.wsUrl, { auth: { deviceToken } });
    open.push(device.client);
    expect(device.frame.ok).toBe(true);
    for (const method of ['ratelimit.lockouts', 'ratelimit.unlock', 'ratelimit.ban']) {
      const r = await device.client.request(method, { limiter: 'auth', key: '127.0.0.1', ms: 1 });
      expect(r.error).toEqual({
        code: 'INVALID_REQUEST',
        message: `${method} needs an operator: connect with the shared secret or the password (a device token is not enough)`,
        retryable: false,
        details: { code: 'OPERATOR_REQUIRED', method },
      });
    }
    expect(g.gateway.status().quotas[0]?.size).toBe(0);
  });

  it('gives each admin method its own control-plane bucket: the 31st unlock in 60 s is refused', async () => {
    const g = await start();
    const ops = await operator(g);
    for (let i = 1; i <= 30; i++) {
      const r = await ops.request('ratelimit.unlock', { limiter: 'auth', key: ATTACKER });
      expect(r.ok).toBe(true);
    }
    g.clock.advance(1_000);
    const refused = await ops.request('ratelimit.unlock', { limiter: 'auth', key: ATTACKER });
    expect(refused.error).toEqual(
      methodRateLimitedError('ratelimit.unlock', 59_000, { limit: 30, windowMs: 60_000 }),
    );
    // Listing and banning keep their own buckets.
    expect((await ops.request('ratelimit.lockouts')).ok).toBe(true);
    const ban = await ops.request('ratelimit.ban', { limiter: 'auth', key: ATTACKER, ms: 1_000 });
    expect(ban.ok).toBe(true);
  });

  it('answers bad params with INVALID_REQUEST and changes nothing', async () => {
    const g = await start();
    await lockOut(g);
    const ops = await operator(g);
    const cases: Array<[string, unknown, string, Record<string, unknown> | undefined]> = [
      [
        'ratelimit.unlock',
        { limiter: 'sessions', key: ATTACKER },
        'invalid params: limiter must be one of auth, auth-browser, webhook, auth.pair, auth.account, auth.spray, auth.scope',
        { option: 'limiter', limiters: ['auth', 'auth-browser', 'webhook', ...LAYER_NAMES] },
      ],
      [
        'ratelimit.unlock',
        { key: ATTACKER },
        'invalid params: limiter must be one of auth, auth-browser, webhook, auth.pair, auth.account, auth.spray, auth.scope',
        { option: 'limiter', limiters: ['auth', 'auth-browser', 'webhook', ...LAYER_NAMES] },
      ],
      [
        'ratelimit.unlock',
        { limiter: 'auth', key: ATTACKER, sope: 'password' },
        'invalid ratelimit.unlock params: unknown field "sope" (expected limiter, key, account, scope)',
        undefined,
      ],
      [
        'ratelimit.unlock',
        { limiter: 'auth', key: '' },
        'invalid params: key must be a non-empty string of at most 2063 characters without control characters',
        { option: 'key' },
      ],
      [
        'ratelimit.unlock',
        { limiter: 'auth', key: `${ATTACKER}\n{"forged":true}` },
        'invalid params: key must be a non-empty string of at most 2063 characters without control characters',
        { option: 'key' },
      ],
      [
        'ratelimit.unlock',
        { limiter: 'auth', key: 'x'.repeat(2064) },
        'invalid params: key must be a non-empty string of at most 2063 characters without control characters',
        { option: 'key' },
      ],
      [
        'ratelimit.unlock',
        { limiter: 'auth', key: ATTACKER, scope: 'shared secret' },
        'invalid params: scope must be 1–64 of letters, digits, _ . -',
        { option: 'scope' },
      ],
      [
        'ratelimit.ban',
        { limiter: 'auth', key: ATTACKER, ms: 0 },
        'invalid ratelimit.ban params: ms must be an integer from 1 to 2147483647',
        { option: 'ms' },
      ],
      [
        'ratelimit.ban',
        { limiter: 'auth', key: ATTACKER, ms: '1h' },
        'invalid ratelimit.ban params: ms must be an integer from 1 to 2147483647',
        { option: 'ms' },
      ],
      [
        'ratelimit.ban',
        { limiter: 'auth', key: ATTACKER, ms: 2 ** 31 },
        'invalid ratelimit.ban params: ms must be an integer from 1 to 2147483647',
        { option: 'ms' },
      ],
      [
        'ratelimit.lockouts',
        { limit: 1001 },
        'invalid params: limit must be an integer from 1 to 1000',
        { option: 'limit' },
      ],
      [
        'ratelimit.lockouts',
        [],
        'invalid ratelimit.lockouts params: expected an object',
        undefined,
      ],
      [
        // Thousands of unknown fields are named three at a time, each cut short.
        'ratelimit.lockouts',
        Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`f${i}${'x'.repeat(100)}`, 1])),
        `invalid ratelimit.lockouts params: unknown fields "f0${'x'.repeat(62)}", "f1${'x'.repeat(62)}", "f2${'x'.repeat(62)}" and 497 more (expected limiter, scope, limit)`,
        undefined,
      ],
    ];
    for (const [method, params, message, details] of cases) {
      const r = await ops.request(method, params);
      expect(r.error, `${method} ${JSON.stringify(params).slice(0, 80)}`).toEqual({
        code: 'INVALID_REQUEST',
        message,
        retryable: false,
        ...(details !== undefined && { details }),
      });
    }
    const listed = await ops.request('ratelimit.lockouts');
    expect(listed.payload.lockouts).toHaveLength(1);
  });
});

// Here the gateway trusts no proxy, so /status serves a direct loopback client freely, and the
// client to lock out is a loopback peer that sends forwarding headers: not direct-local, so keyed
// 127.0.0.1 and not exempt.
describe('POST /status/unlock (the status page button)', () => {
  const LOCAL = '127.0.0.1';
  const relayed = { 'x-forwarded-for': ATTACKER };

  async function startDirect(): Promise<Harness> {
    h = await startGateway();
    return h;
  }

  async function lockOutRelayed(g: Harness): Promise<void> {
    for (let i = 0; i < 10; i++)
      await connect(g.wsUrl, { headers: relayed, auth: { token: `guess-${i}` } });
    expect(await relayedLogsIn(g)).toBe(false);
  }

  async function relayedLogsIn(g: Harness): Promise<boolean> {
    const r = await connect(g.wsUrl, { headers: relayed, auth: { token: TOKEN } });
    r.client.close();
    return r.frame.ok === true;
  }

  /** The unlock token of a freshly served /status page. */
  async function pageToken(g: Harness): Promise<string> {
    const page = await request(`${g.url}/status`);
    const token = /data-unlock-token="([\w-]+)"/.exec(page.body)?.[1];
    if (token === undefined) throw new Error('no unlock token on /status');
    return token;
  }

  function post(
    g: Harness,
    fields: Record<string, string>,
    headers: Record<string, string> = {},
  ): ReturnType<typeof request> {
    return request(`${g.url}/status/unlock`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    });
  }

  it('lifts the lockout for the page itself: 303 back to /status, and the client logs in', async () => {
    const g = await startDirect();
    await lockOutRelayed(g);
    const token = await pageToken(g);
    const fields = { token, limiter: 'auth', scope: 'shared-secret', key: LOCAL };
    const r = await post(g, fields, { origin: g.url, 'sec-fetch-site': 'same-origin' });
    expect([r.status, r.headers.location]).toEqual([303, '/status']);
    expect(g.gateway.status().lockouts[0]?.active).toEqual([]);
    expect(await relayedLogsIn(g)).toBe(true);
    expect(g.logger.entries().find((l) => l['event'] === 'ratelimit.unlock')).toMatchObject({
      via: 'status',
      clientIp: '127.0.0.1',
      unlocked: ['shared-secret'],
    });
    // The page's script asks for JSON.
    await lockOutRelayed(g);
    const json = await post(g, fields, { accept: 'application/json' });
    expect([json.status, JSON.parse(json.body)]).toEqual([
      200,
      { limiter: 'auth', key: LOCAL, unlocked: ['shared-secret'] },
    ]);
  });

  it('refuses a cross-site POST, a missing or wrong token, another method, type or size', async () => {
    const g = await startDirect();
    await lockOutRelayed(g);
    const token = await pageToken(g);
    const fields = { token, limiter: 'auth', scope: 'shared-secret', key: LOCAL };
    const answers = [
      await post(g, fields, { origin: 'http://evil.localhost:5173' }),
      await post(g, fields, { origin: 'null' }),
      await post(g, fields, { 'sec-fetch-site': 'same-site' }),
      await post(g, fields, { 'sec-fetch-site': 'cross-site' }),
      await post(g, { ...fields, token: '' }),
      await post(g, { limiter: 'auth', scope: 'shared-secret', key: LOCAL }),
      await post(g, { ...fields, token: `${token}x` }),
      await request(`${g.url}/status/unlock`),
      await request(`${g.url}/status/unlock`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(fields),
      }),
      await post(g, { ...fields, pad: 'x'.repeat(9_000) }),
      await post(g, { ...fields, limiter: 'nope' }),
    ].map((r) => [r.status, r.body]);
    expect(answers).toEqual([
      [403, 'Forbidden: a cross-site request cannot unlock'],
      [403, 'Forbidden: a cross-site request cannot unlock'],
      [403, 'Forbidden: a cross-site request cannot unlock'],
      [403, 'Forbidden: a cross-site request cannot unlock'],
      [403, 'Forbidden: missing or wrong unlock token (reload /status)'],
      [403, 'Forbidden: missing or wrong unlock token (reload /status)'],
      [403, 'Forbidden: missing or wrong unlock token (reload /status)'],
      [405, 'Method Not Allowed'],
      [415, 'Unsupported Media Type: send application/x-www-form-urlencoded'],
      [413, 'Payload Too Large'],
      [
        400,
        'Bad Request: invalid params: limiter must be one of auth, auth-browser, webhook, auth.pair, auth.account, auth.spray, auth.scope',
      ],
    ]);
    // Still locked out.
    expect(g.gateway.status().lockouts[0]?.active.map((a) => a.key)).toEqual([LOCAL]);
    expect(await relayedLogsIn(g)).toBe(false);
  });

  it('wants the shared token from anyone but a direct loopback client, under the auth lockout', async () => {
    const g = await startDirect();
    await lockOutRelayed(g);
    const token = await pageToken(g);
    const fields = { token, limiter: 'auth', scope: 'shared-secret', key: LOCAL };
    // Another Host (a proxy on this machine, a rebound name): the shared token is needed.
    const remote = { host: 'gateway.example' };
    expect((await post(g, fields, remote)).status).toBe(401);
    // The locked-out client itself cannot lift its lockout with the token: it is refused first.
    const self = await post(g, fields, { ...relayed, authorization: `Bearer ${TOKEN}` });
    expect([self.status, self.headers['retry-after']]).toEqual([429, '300']);
    const authed = await post(g, fields, { ...remote, authorization: `Bearer ${TOKEN}` });
    expect(authed.status).toBe(303);
    expect(await relayedLogsIn(g)).toBe(true);
  });
});
