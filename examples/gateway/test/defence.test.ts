// Defence in depth in the reference gateway (docs/design.md#defence-in-depth): the shared secret's
// and the password's scope budgets (SCOPE_BUDGET), device ids as accounts (pair and account
// layers), and the status board listing soft lockouts (under attack) apart from hard ones. Many
// addresses come through a trusted proxy hop on loopback (X-Forwarded-For); time is the
// gateway's manual clock.
import { authRateLimitedError } from '@portcullis/core';
import { authFailedError } from '@portcullis/core/adapter';
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type GatewayClient } from '../src/client.js';
import { NO_DEVICE } from '../src/connect.js';
import { SCOPE_BUDGET } from '../src/limits.js';
import { renderMain } from '../src/status-view.js';
import { type Harness, PASSWORD, request, startGateway, TOKEN, testConfig } from './helpers.js';

let h: Harness | undefined;
const open: GatewayClient[] = [];

afterEach(async () => {
  for (const c of open.splice(0)) c.close();
  await h?.close();
  h = undefined;
});

/** A gateway behind a reverse proxy on this machine: X-Forwarded-For from 127.0.0.1 is believed. */
async function proxied(): Promise<Harness> {
  h = await startGateway({ config: testConfig({ gateway: { trustedProxies: ['127.0.0.1'] } }) });
  return h;
}

const via = (ip: string) => ({ 'x-forwarded-for': `${ip}, 127.0.0.1` });

/** The n-th address of the botnet (198.18.0.0/15, the benchmarking range). */
const bot = (n: number) => `198.18.${Math.floor(n / 250)}.${(n % 250) + 1}`;

type Auth = Record<string, unknown>;

/** One connect from `ip` through the proxy; an accepted socket is kept open until the test ends. */
async function from(g: Harness, ip: string, auth: Auth, device?: string) {
  const r = await connect(g.wsUrl, {
    headers: via(ip),
    auth,
    ...(device !== undefined && { device: { id: device } }),
  });
  if (r.frame.ok) open.push(r.client);
  return r;
}

/** `count` connects from distinct bot addresses (`first` on), in parallel batches; their frames. */
async function botnet(
  g: Harness,
  first: number,
  count: number,
  auth: (n: number) => Auth,
  device?: string,
) {
  const frames: unknown[] = [];
  for (let n = first; n < first + count; n += 25) {
    const batch = [];
    for (let i = n; i < Math.min(n + 25, first + count); i++)
      batch.push(from(g, bot(i), auth(i), device));
    for (const r of await Promise.all(batch)) {
      expect(r.close?.code).toBe(1008);
      frames.push(r.frame.error);
    }
  }
  return frames;
}

/** The refusal every layer answers: the same frame (only the wait differs) and close 1008. */
function refusedFrame(retryAfterMs: number) {
  return { type: 'res', id: 'c1', ok: false, error: authRateLimitedError(retryAfterMs) };
}

describe('scope budget of the shared secret and the password', () => {
  it('puts the shared secret under attack after 300 failures from 300 addresses: a new client is refused, a trusted one logs in', {
    timeout: 60_000,
  }, async () => {
    const g = await proxied();
    expect(SCOPE_BUDGET).toEqual({ maxAttempts: 300, windowMs: 3_600_000, lockoutMs: 3_600_000 });
    // Before the attack: the operator's laptop logs in once (trusted in the scope for 30 days).
    const before = await from(g, '203.0.113.50', { token: TOKEN });
    expect(before.frame.payload.auth).toEqual({ scope: 'shared-secret', exempt: false });

    // 300 addresses, one wrong guess each: every one is counted (the 300th starts the soft lock).
    const guesses = await botnet(g, 0, 300, (n) => ({ token: `guess-${n}` }));
    expect(guesses).toEqual(Array(300).fill(authFailedError('invalid')));

    // A client never seen before is refused even with the right token: the frame every layer
    // answers, and close 1008 with its message.
    const fresh = await from(g, '198.51.100.77', { token: TOKEN });
    expect(fresh.frame).toEqual(refusedFrame(3_600_000));
    expect(fresh.close).toEqual({ code: 1008, reason: authRateLimitedError(1).message });
    // So is the 301st bot's guess (it never reaches a count).
    const late = await from(g, bot(300), { token: 'guess-300' });
    expect(late.frame).toEqual(refusedFrame(3_600_000));

    // The trusted laptop logs in on its first try, during the attack.
    const trusted = await from(g, '203.0.113.50', { token: TOKEN });
    expect(trusted.frame.payload.auth).toEqual({ scope: 'shared-secret', exempt: false });

    // The /status bearer is the shared secret: the same budget, the same trust, HTTP's answer.
    const bearer = (ip: string) =>
      request(`${g.url}/status.json`, {
        headers: { authorization: `Bearer ${TOKEN}`, ...via(ip) },
      });
    const refused = await bearer('198.51.100.78');
    expect([refused.status, refused.headers['retry-after'], JSON.parse(refused.body)]).toEqual([
      429,
      '3600',
      authRateLimitedError(3_600_000),
    ]);
    expect((await bearer('203.0.113.50')).status).toBe(200);

    // The password is its own class with its own budget: untouched.
    const password = await from(g, '198.51.100.79', { password: PASSWORD });
    expect(password.frame.payload.auth).toEqual({ scope: 'password', exempt: false });

    // The soft lock ends on its own; then a new client logs in again.
    g.clock.advance(3_599_999);
    expect((await from(g, '198.51.100.80', { token: TOKEN })).frame).toEqual(refusedFrame(1));
    g.clock.advance(1);
    const after = await from(g, '198.51.100.80', { token: TOKEN });
    expect(after.frame.payload.auth).toEqual({ scope: 'shared-secret', exempt: false });
  });

  it('counts the password apart: 300 failures put only the password under attack', {
    timeout: 60_000,
  }, async () => {
    const g = await proxied();
    const guesses = await botnet(g, 0, 300, (n) => ({ password: `guess-${n}` }));
    expect(guesses).toEqual(Array(300).fill(authFailedError('invalid')));
    const fresh = await from(g, '198.51.100.77', { password: PASSWORD });
    expect(fresh.frame).toEqual(refusedFrame(3_600_000));
    const token = await from(g, '198.51.100.77', { token: TOKEN });
    expect(token.frame.payload.auth).toEqual({ scope: 'shared-secret', exempt: false });
  });

  it('answers the client layer with the same frame: only the wait differs', async () => {
    const g = await proxied();
    for (let i = 0; i < 10; i++)
      expect((await from(g, '203.0.113.9', { token: `x${i}` })).frame.error).toEqual(
        authFailedError('invalid'),
      );
    const locked = await from(g, '203.0.113.9', { token: TOKEN });
    expect(locked.frame).toEqual(refusedFrame(300_000));
    expect(locked.close).toEqual({ code: 1008, reason: authRateLimitedError(1).message });
  });
});

describe('device ids are the accounts of device tokens', () => {
  /** A device paired with the shared secret from `ip`: its token. */
  async function pair(g: Harness, ip: string, id: string): Promise<string> {
    const r = await from(g, ip, { token: TOKEN }, id);
    expect(r.frame.payload.device).toEqual({ id, token: expect.stringMatching(/^dev_/) });
    return r.frame.payload.device.token as string;
  }

  it('locks one client out of one device after 20 wrong tokens in a row (pair), not out of others', async () => {
    const g = await proxied();
    const laptop = await pair(g, '203.0.113.20', 'laptop-1');
    await pair(g, '203.0.113.20', 'phone-2');
    const guess = (i: number, device = 'laptop-1') =>
      from(g, '198.51.100.5', { deviceToken: `dev_guess${i}` }, device);
    // 10 a minute (the client layer), twice: the 20th starts the pair's hour.
    for (let i = 0; i < 10; i++)
      expect((await guess(i)).frame.error).toEqual(authFailedError('invalid'));
    g.clock.advance(300_000);
    for (let i = 10; i < 20; i++)
      expect((await guess(i)).frame.error).toEqual(authFailedError('invalid'));
    g.clock.advance(300_000);
    // The client's own lockout is over: another device's guess is counted again...
    expect((await guess(20, 'phone-2')).frame.error).toEqual(authFailedError('invalid'));
    // ...but laptop-1 refuses it, even with laptop-1's right token: the same frame, close 1008.
    const right = await from(g, '198.51.100.5', { deviceToken: laptop }, 'laptop-1');
    expect(right.frame).toEqual(refusedFrame(3_300_000));
    expect(right.close?.code).toBe(1008);
    // Another client is not touched by the pair.
    const owner = await from(g, '203.0.113.20', { deviceToken: laptop });
    expect(owner.frame.payload).toMatchObject({
      auth: { scope: 'device-token' },
      device: { id: 'laptop-1' },
    });
    expect(g.gateway.status().lockouts[0]?.active).toEqual([
      {
        scope: 'device-token',
        key: '198.51.100.5',
        untilMs: 3_300_000,
        layer: 'pair',
        unlock: true,
        account: 'laptop-1',
      },
    ]);
  });

  it('puts a device under attack after 100 wrong tokens from 100 addresses: its trusted client still logs in', {
    timeout: 60_000,
  }, async () => {
    const g = await proxied();
    const laptop = await pair(g, '203.0.113.20', 'laptop-1');
    const phone = await pair(g, '203.0.113.21', 'phone-2');
    // The laptop logs in with its device token once: trusted for laptop-1.
    const once = await from(g, '203.0.113.20', { deviceToken: laptop });
    expect(once.frame.payload.device).toEqual({ id: 'laptop-1' });

    const guesses = await botnet(g, 0, 100, (n) => ({ deviceToken: `dev_guess${n}` }), 'laptop-1');
    expect(guesses).toEqual(Array(100).fill(authFailedError('invalid')));

    // laptop-1's own token from a client it never logged in from: refused (soft, account layer).
    const stolen = await from(g, '198.51.100.200', { deviceToken: laptop });
    expect(stolen.frame).toEqual(refusedFrame(3_600_000));
    expect(stolen.close?.code).toBe(1008);
    // The laptop itself logs in; another device is not under attack.
    const trusted = await from(g, '203.0.113.20', { deviceToken: laptop });
    expect(trusted.frame.payload.device).toEqual({ id: 'laptop-1' });
    const other = await from(g, '198.51.100.201', { deviceToken: phone });
    expect(other.frame.payload.device).toEqual({ id: 'phone-2' });
  });

  it('locks out a client that fails against 10 devices in 10 minutes, for every device (spray)', async () => {
    const g = await proxied();
    const phone = await pair(g, '203.0.113.21', 'phone-2');
    // 5 a minute, so the client limiter (10 / 60 s) never locks: only the spray layer can.
    for (let i = 0; i < 10; i++) {
      if (i === 5) g.clock.advance(61_000);
      const r = await from(g, '198.51.100.7', { deviceToken: `dev_x${i}` }, `device-${i}`);
      expect(r.frame.error).toEqual(authFailedError('invalid'));
    }
    // Even a right token for a device it never guessed at: the same frame, close 1008.
    const right = await from(g, '198.51.100.7', { deviceToken: phone }, 'phone-2');
    expect(right.frame).toEqual(refusedFrame(3_600_000));
    expect(right.close?.code).toBe(1008);
    expect(g.gateway.status().lockouts[0]?.active).toEqual([
      {
        scope: 'device-token',
        key: '198.51.100.7',
        untilMs: 3_600_000,
        layer: 'spray',
        unlock: true,
      },
    ]);
  });

  it('counts a wrong token that names no device against one shared bucket', async () => {
    const g = await proxied();
    expect(NO_DEVICE).toBe('(no device id)');
    // 20 in a row from one client, no device id: the pair with the shared bucket locks.
    for (let i = 0; i < 20; i++) {
      if (i === 10) g.clock.advance(300_000);
      expect((await from(g, '198.51.100.6', { deviceToken: `dev_x${i}` })).frame.error).toEqual(
        authFailedError('invalid'),
      );
    }
    g.clock.advance(300_000);
    expect((await from(g, '198.51.100.6', { deviceToken: 'dev_x20' })).frame).toEqual(
      refusedFrame(3_300_000),
    );
    expect(g.gateway.status().lockouts[0]?.active).toEqual([
      {
        scope: 'device-token',
        key: '198.51.100.6',
        untilMs: 3_300_000,
        layer: 'pair',
        unlock: true,
        account: NO_DEVICE,
      },
    ]);
  });
});

describe('the status board: soft lockouts apart from hard ones', () => {
  it('lists the scope and the device under attack apart, the client and pair lockouts as before', {
    timeout: 60_000,
  }, async () => {
    const g = await proxied();
    await from(g, '203.0.113.20', { token: TOKEN }, 'laptop-1');
    await botnet(g, 0, 300, (n) => ({ token: `guess-${n}` }));
    g.clock.advance(60_000);
    await botnet(g, 300, 100, (n) => ({ deviceToken: `dev_guess${n}` }), 'laptop-1');
    // A hard client lockout too (the password class is not under attack).
    for (let i = 0; i < 10; i++) await from(g, '203.0.113.9', { password: `x${i}` });
    const s = g.gateway.status();
    expect(s.underAttack).toEqual({
      title: 'Under attack (soft lockouts)',
      rule: 'too many failures against one account or a whole credential class from all clients: clients that never logged in are refused, clients that did (trusted for 30 days) still get in; ends on its own',
      activeCount: 2,
      active: [
        { layer: 'account', scope: 'device-token', account: 'laptop-1', untilMs: 3_600_000 },
        { layer: 'scope', scope: 'shared-secret', untilMs: 3_540_000 },
      ],
    });
    // The hard ones: only the client's lockout (soft ones never show there); its unlock stays.
    expect(s.lockouts[0]?.active).toEqual([
      { scope: 'password', key: '203.0.113.9', untilMs: 300_000, layer: 'client', unlock: true },
    ]);
    // Drawn apart, each with its unlock button (it posts the layer's limiter); the client's row keeps its own.
    const html = renderMain(s as never, 'tok');
    expect(html).toContain(
      '<h2>Under attack</h2>\n<div class="grid" id="under-attack"><section class="card soft" data-limiter="under-attack"><h3>Under attack (soft lockouts)<span class="count hot">2</span></h3>',
    );
    expect(html).toContain(
      '<tr data-layer="account" data-scope="device-token" data-account="laptop-1"><td class="nowrap"><span class="tag soft">account</span></td><td class="nowrap">device-token</td><td class="key">laptop-<wbr>1</td><td class="left" data-until="4660000" data-over="0:00">60:00</td><td class="act"><form class="unlock" method="post" action="/status/unlock"><input type="hidden" name="token" value="tok"><input type="hidden" name="limiter" value="auth.account"><input type="hidden" name="scope" value="device-token"><input type="hidden" name="account" value="laptop-1"><button type="submit" title="lift this lockout now">unlock</button></form></td></tr>',
    );
    expect(html).toContain(
      '<tr data-layer="scope" data-scope="shared-secret"><td class="nowrap"><span class="tag soft">scope</span></td><td class="nowrap">shared-secret</td><td class="key">every account</td><td class="left" data-until="4600000" data-over="0:00">59:00</td><td class="act"><form class="unlock" method="post" action="/status/unlock"><input type="hidden" name="token" value="tok"><input type="hidden" name="limiter" value="auth.scope"><input type="hidden" name="scope" value="shared-secret"><button type="submit" title="lift this lockout now">unlock</button></form></td></tr>',
    );
    expect(html).toMatch(
      /<tr data-limiter="auth" data-scope="password" data-key="203.0.113.9" data-layer="client">.*<form class="unlock"/,
    );
    // The page served over HTTP carries the same card (to the bearer of a trusted client: the
    // shared secret is under attack, and 203.0.113.20 logged in before it).
    const page = await request(`${g.url}/status`, {
      headers: { authorization: `Bearer ${TOKEN}`, ...via('203.0.113.20') },
    });
    expect(page.status).toBe(200);
    expect(page.body).toContain(
      '<tr data-layer="account" data-scope="device-token" data-account="laptop-1"><td class="nowrap"><span class="tag soft">account</span></td>',
    );
    // The refused list names the layers' lockouts as they started.
    const started = s.refused
      .filter((e) => e.event === 'lockout')
      .map((e) => [e.limiter, e.scope, e.key, e.detail]);
    expect(started).toEqual([
      ['auth', 'password', '203.0.113.9', undefined],
      [
        'auth.account',
        'device-token',
        'account:laptop-1',
        'the account is under attack: its untrusted clients refused',
      ],
      [
        'auth.scope',
        'shared-secret',
        '*',
        'the credential class is under attack: untrusted clients refused',
      ],
    ]);
  });

  it('draws a pair lockout on its client card, tagged, with the account it is for', async () => {
    const g = await proxied();
    for (let i = 0; i < 20; i++) {
      if (i === 10) g.clock.advance(300_000);
      await from(g, '198.51.100.5', { deviceToken: `dev_guess${i}` }, 'laptop-1');
    }
    const html = renderMain(g.gateway.status() as never, 'tok');
    expect(html).toContain(
      '<tr data-limiter="auth" data-scope="device-token" data-key="198.51.100.5" data-layer="pair" data-account="laptop-1"><td class="nowrap">device-token <span class="tag layer" title="this client, this account only (20 failures in a row)">pair</span></td><td class="key">198.51.100.5 → laptop-<wbr>1</td><td class="left" data-until="4900000" data-over="0:00">60:00</td><td class="act"><form class="unlock" method="post" action="/status/unlock"><input type="hidden" name="token" value="tok"><input type="hidden" name="limiter" value="auth.pair"><input type="hidden" name="scope" value="device-token"><input type="hidden" name="key" value="198.51.100.5"><input type="hidden" name="account" value="laptop-1"><button type="submit" title="lift this lockout now">unlock</button></form></td></tr>',
    );
  });
});
