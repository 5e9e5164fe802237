// What the admin RPC and /status add for operators beyond the client lockouts: the access list
// (ratelimit.access, .allow, .deny, .unlist: a denied client's connect is refused with
// ACCESS_DENIED before its credential is compared) and the auth layers' lockouts (pair, account,
// spray, scope), which ratelimit.lockouts lists and ratelimit.unlock and the status page's button
// lift. Clients come through a trusted proxy hop on loopback; the clock is the gateway's manual one.
import { accessDeniedError } from '@portcullis/core';
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

async function proxied(): Promise<Harness> {
  h = await startGateway({ config: testConfig({ gateway: { trustedProxies: ['127.0.0.1'] } }) });
  return h;
}

const via = (ip: string) => ({ 'x-forwarded-for': `${ip}, 127.0.0.1` });

async function from(g: Harness, ip: string, auth: Record<string, unknown>, device?: string) {
  const r = await connect(g.wsUrl, {
    headers: via(ip),
    auth,
    ...(device !== undefined && { device: { id: device } }),
  });
  if (r.frame.ok) open.push(r.client);
  return r;
}

/** An operator's connection (the shared secret, from loopback). */
async function operator(g: Harness): Promise<GatewayClient> {
  const r = await connect(g.wsUrl, { auth: { token: TOKEN }, device: { id: 'ops-laptop' } });
  expect(r.frame.ok).toBe(true);
  open.push(r.client);
  return r.client;
}

describe('the access list over the admin RPC', () => {
  it('denies a network: its connects are refused before the token is compared; unlist lets it in', async () => {
    const g = await proxied();
    const ops = await operator(g);
    const denied = await ops.request('ratelimit.deny', {
      subject: '203.0.113.0/24',
      reason: 'credential stuffing',
    });
    expect(denied.payload).toEqual({
      rule: {
        subject: 'ip:203.0.113.0/24',
        action: 'deny',
        reason: 'credential stuffing',
        until: null,
      },
    });
    const refused = await from(g, '203.0.113.9', { token: TOKEN });
    expect(refused.frame).toEqual({
      type: 'res',
      id: 'c1',
      ok: false,
      error: accessDeniedError('credential stuffing', 0),
    });
    expect(refused.close).toEqual({ code: 1008, reason: 'access denied: credential stuffing' });
    // Another address is not touched.
    expect((await from(g, '198.51.100.4', { token: TOKEN })).frame.ok).toBe(true);
    // An allowed address inside the network gets in: the most specific rule decides.
    await ops.request('ratelimit.allow', { subject: '203.0.113.50' });
    expect((await from(g, '203.0.113.50', { token: TOKEN })).frame.ok).toBe(true);
    expect((await ops.request('ratelimit.access')).payload).toEqual({
      rules: [
        {
          subject: 'ip:203.0.113.0/24',
          action: 'deny',
          reason: 'credential stuffing',
          until: null,
        },
        { subject: 'ip:203.0.113.50', action: 'allow', reason: '', until: null },
      ],
      truncated: false,
    });
    expect((await ops.request('ratelimit.unlist', { subject: '203.0.113.0/24' })).payload).toEqual({
      subject: '203.0.113.0/24',
      removed: true,
    });
    expect((await from(g, '203.0.113.9', { token: TOKEN })).frame.ok).toBe(true);
  });

  it('a deny that ends: retryable, and over once its time has passed', async () => {
    const g = await proxied();
    const ops = await operator(g);
    const r = await ops.request('ratelimit.deny', { subject: 'account:laptop-1', ms: 60_000 });
    expect(r.payload).toEqual({
      rule: { subject: 'account:laptop-1', action: 'deny', reason: '', until: 1_060_000 },
    });
    const refused = await from(g, '198.51.100.7', { deviceToken: 'dev_x' }, 'laptop-1');
    expect(refused.frame.error).toEqual(accessDeniedError('', 60_000));
    g.clock.advance(60_000);
    const after = await from(g, '198.51.100.7', { deviceToken: 'dev_x' }, 'laptop-1');
    expect(after.frame.error?.details?.code).toBe('AUTH_INVALID');
  });

  it('answers bad params with INVALID_REQUEST and changes nothing', async () => {
    const g = await proxied();
    const ops = await operator(g);
    const cases: Array<[string, unknown, string]> = [
      [
        'ratelimit.deny',
        {},
        'invalid ratelimit.deny params: subject must be an IP address or CIDR network, account:<name> or origin:<origin>',
      ],
      [
        'ratelimit.deny',
        { subject: '10.0.0.1/33' },
        'invalid params: access list: "10.0.0.1/33" is not an IP address or CIDR network (e.g. 203.0.113.7, 10.0.0.0/8, 2001:db8::/32)',
      ],
      [
        'ratelimit.deny',
        { subject: '10.0.0.1', ms: 0 },
        'invalid params: access list: ms must be an integer from 1 to 315360000000 (10 years), or left out for a rule that lasts until removed',
      ],
      [
        'ratelimit.allow',
        { subject: '10.0.0.1', reason: 'a\nb' },
        'invalid params: access list: reason must be a string of at most 200 characters without control characters',
      ],
      [
        'ratelimit.unlist',
        { subject: 'origin:nope' },
        'invalid params: access list: "nope" is not an origin (scheme://host[:port], or null)',
      ],
      ['ratelimit.access', { limit: 0 }, 'invalid params: limit must be an integer from 1 to 1000'],
      [
        'ratelimit.deny',
        { subject: '10.0.0.1', why: 'x' },
        'invalid ratelimit.deny params: unknown field "why" (expected subject, reason, ms)',
      ],
    ];
    for (const [method, params, message] of cases) {
      const r = await ops.request(method, params);
      expect(r.error?.code, method).toBe('INVALID_REQUEST');
      expect(r.error?.message, method).toBe(message);
    }
    expect((await ops.request('ratelimit.access')).payload).toEqual({
      rules: [],
      truncated: false,
    });
  });

  it('is an operator method: a device token cannot deny', async () => {
    const g = await proxied();
    const paired = await from(g, '203.0.113.20', { token: TOKEN }, 'phone-2');
    const token = paired.frame.payload.device.token as string;
    const device = await from(g, '203.0.113.21', { deviceToken: token }, 'phone-2');
    const r = await device.client.request('ratelimit.deny', { subject: '203.0.113.20' });
    expect(r.error?.code).toBe('INVALID_REQUEST');
    const ops = await operator(g);
    expect((await ops.request('ratelimit.access')).payload).toEqual({
      rules: [],
      truncated: false,
    });
  });
});

describe("the auth layers' lockouts", () => {
  /** 20 wrong device tokens for laptop-1 from one client, 10 a window: the pair's lockout. */
  async function pairLockout(g: Harness, ip: string): Promise<void> {
    for (let i = 0; i < 20; i++) {
      if (i === 10) g.clock.advance(300_000);
      await from(g, ip, { deviceToken: `dev_guess${i}` }, 'laptop-1');
    }
    g.clock.advance(300_000);
  }

  it('lists a pair lockout and lifts it over the RPC: the client reaches the device again', async () => {
    const g = await proxied();
    await pairLockout(g, '198.51.100.5');
    const ops = await operator(g);
    const listed = await ops.request('ratelimit.lockouts', { limiter: 'auth.pair' });
    expect(listed.payload).toEqual({
      lockouts: [
        {
          limiter: 'auth.pair',
          scope: 'device-token',
          key: '198.51.100.5',
          account: 'laptop-1',
          layer: 'pair',
          until: 4_900_000,
          retryAfterMs: 3_300_000,
        },
      ],
      truncated: false,
    });
    const refused = await from(g, '198.51.100.5', { deviceToken: 'dev_again' }, 'laptop-1');
    expect(refused.frame.error?.details?.code).toBe('AUTH_RATE_LIMITED');
    const r = await ops.request('ratelimit.unlock', {
      limiter: 'auth.pair',
      key: '::ffff:198.51.100.5',
      account: 'laptop-1',
    });
    expect(r.payload).toEqual({
      limiter: 'auth.pair',
      key: '198.51.100.5',
      account: 'laptop-1',
      unlocked: ['device-token'],
    });
    const again = await from(g, '198.51.100.5', { deviceToken: 'dev_again' }, 'laptop-1');
    expect(again.frame.error?.details?.code).toBe('AUTH_INVALID');
    expect((await ops.request('ratelimit.lockouts', { limiter: 'auth.pair' })).payload).toEqual({
      lockouts: [],
      truncated: false,
    });
  });

  it('refuses a layer unlock without what names the lockout, or with what it does not take', async () => {
    const g = await proxied();
    const ops = await operator(g);
    const cases: Array<[unknown, string]> = [
      [
        { limiter: 'auth.pair', key: '198.51.100.5' },
        'invalid ratelimit.unlock params: auth.pair needs account',
      ],
      [
        { limiter: 'auth.account', key: '198.51.100.5', account: 'a' },
        'invalid ratelimit.unlock params: auth.account takes no key',
      ],
      [
        { limiter: 'auth.scope', account: 'a' },
        'invalid ratelimit.unlock params: auth.scope takes no account',
      ],
      [
        { limiter: 'auth', key: '198.51.100.5', account: 'a' },
        "invalid ratelimit.unlock params: account names an auth layer's lockout (limiter auth.pair or auth.account)",
      ],
      [
        { limiter: 'auth.account', account: '' },
        'invalid params: account must be 1 to 256 characters without control characters',
      ],
    ];
    for (const [params, message] of cases) {
      const r = await ops.request('ratelimit.unlock', params);
      expect(r.error?.message).toBe(message);
    }
  });

  it("the status page's button lifts a pair lockout (it posts the layer's limiter)", async () => {
    // No trusted proxy: /status is served to a direct loopback client. The attacker relays
    // through this machine (an X-Forwarded-For not believed), so it is 127.0.0.1, not exempt.
    const g = await startGateway();
    h = g;
    for (let i = 0; i < 20; i++) {
      if (i === 10) g.clock.advance(300_000);
      await connect(g.wsUrl, {
        headers: { 'x-forwarded-for': '198.51.100.5' },
        auth: { deviceToken: `dev_guess${i}` },
        device: { id: 'laptop-1' },
      });
    }
    g.clock.advance(300_000);
    const page = await request(`${g.url}/status`);
    expect(page.status).toBe(200);
    const token = /data-unlock-token="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const form = /<form class="unlock"[^>]*>(.*?)<\/form>/.exec(page.body)?.[1] ?? '';
    const fields = Object.fromEntries(
      [...form.matchAll(/name="(\w+)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    expect(fields).toEqual({
      token,
      limiter: 'auth.pair',
      scope: 'device-token',
      key: '127.0.0.1',
      account: 'laptop-1',
    });
    const posted = await request(`${g.url}/status/unlock`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        origin: g.url,
      },
      body: new URLSearchParams(fields as Record<string, string>).toString(),
    });
    expect([posted.status, JSON.parse(posted.body)]).toEqual([
      200,
      {
        limiter: 'auth.pair',
        key: '127.0.0.1',
        account: 'laptop-1',
        unlocked: ['device-token'],
      },
    ]);
    expect(g.gateway.status().lockouts[0]?.active).toEqual([]);
  });
});
