import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApp, DEMO_HOOK_TOKEN, DEMO_PASSWORD } from '../src/app.js';

const PASSWORD = 'correct horse';
const TOKEN = 'hook-secret';
const PAGE = 'http://localhost:5173'; // a dev server's page in a local browser

let servers: ServerType[] = [];
afterEach(async () => {
  for (const s of servers) await new Promise((resolve) => s.close(resolve));
  servers = [];
  vi.unstubAllEnvs();
});

/** Serves the app on a real @hono/node-server (the client address is the socket's: 127.0.0.1). */
async function start(options: Parameters<typeof createApp>[0] = {}) {
  const app = createApp(options);
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  servers.push(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const login = (password: string | undefined, headers: Record<string, string> = {}) =>
    fetch(`${url}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ user: 'ada', ...(password !== undefined && { password }) }),
    });
  const hook = (token?: string, name = 'deploy') =>
    fetch(`${url}/hooks/${name}`, {
      method: 'POST',
      headers: token === undefined ? {} : { 'x-hook-token': token },
    });
  return { url, login, hook };
}

function setup(): { clock: ManualClock } {
  return { clock: manualClock(5_000_000) };
}

describe('POST /login (authGuard)', () => {
  it('lets the right password through to the handler, which reads the body again', async () => {
    const { login } = await start({ password: PASSWORD, hookToken: TOKEN });
    const res = await login(PASSWORD, { origin: PAGE });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, user: 'ada' });
  });

  it('locks a browser page out after 5 wrong passwords: 401 × 5, then 429 for 10 minutes, even for the right one', async () => {
    const { clock } = setup();
    const { login } = await start({ password: PASSWORD, hookToken: TOKEN, clock });
    for (let i = 0; i < 5; i++) {
      const res = await login('wrong', { origin: PAGE });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ details: { code: 'AUTH_INVALID' } });
    }
    const locked = await login(PASSWORD, { origin: PAGE });
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).toBe('600');
    expect(await locked.json()).toEqual({
      code: 'INVALID_REQUEST',
      message: 'unauthorized: too many failed authentication attempts (retry later)',
      retryable: true,
      retryAfterMs: 600_000,
      details: {
        code: 'AUTH_RATE_LIMITED',
        authReason: 'rate_limited',
        recommendedNextStep: 'wait_then_retry',
      },
    });
    // Another origin on this machine has its own bucket; a local CLI (no Origin) is exempt.
    expect((await login(PASSWORD, { origin: 'http://127.0.0.1:8080' })).status).toBe(200);
    expect((await login('wrong')).status).toBe(401);
    clock.advance(600_000);
    expect((await login(PASSWORD, { origin: PAGE })).status).toBe(200);
  });

  it('a missing password is answered 401 and counts nowhere', async () => {
    const { clock } = setup();
    const { login } = await start({ password: PASSWORD, hookToken: TOKEN, clock });
    for (let i = 0; i < 8; i++) {
      const res = await login(undefined, { origin: PAGE });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ details: { code: 'AUTH_MISSING' } });
    }
    expect((await login(PASSWORD, { origin: PAGE })).status).toBe(200);
  });
});

describe('/api (rateLimit)', () => {
  it('allows 10 requests per 10 s across every /api route, advertises the budget, then 429', async () => {
    const { clock } = setup();
    const { url } = await start({ clock });
    for (let i = 1; i <= 10; i++) {
      const res = await fetch(`${url}${i % 2 ? '/api/items' : '/api/quota'}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('ratelimit-policy')).toBe('"api";q=10;w=10');
      expect(res.headers.get('ratelimit')).toBe(`"api";r=${10 - i};t=10`);
    }
    clock.advance(2_500);
    const refused = await fetch(`${url}/api/items`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('8');
    expect(await refused.json()).toEqual({
      code: 'RATE_LIMITED',
      message: 'too many requests; retry after 8s',
      retryable: true,
      retryAfterMs: 7_500,
    });
    clock.advance(7_500);
    expect((await fetch(`${url}/api/items`)).status).toBe(200);
  });

  it('hands the decision to handlers as c.get("rateLimit")', async () => {
    const { url } = await start({ clock: manualClock(0) });
    expect(await (await fetch(`${url}/api/quota`)).json()).toEqual({
      allowed: true,
      reason: 'allowed',
      limit: 10,
      remaining: 9,
      retryAfterMs: 0,
      resetMs: 10_000,
      key: '127.0.0.1',
    });
  });

  it('does not limit or count anything outside /api', async () => {
    const { url, hook } = await start({ hookToken: TOKEN, clock: manualClock(0) });
    for (let i = 0; i < 12; i++) {
      const res = await fetch(`${url}/elsewhere`);
      expect(res.status).toBe(404);
      expect(res.headers.get('ratelimit')).toBeNull();
    }
    const accepted = await hook(TOKEN);
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('ratelimit')).toBeNull();
    expect((await fetch(`${url}/api/items`)).headers.get('ratelimit')).toBe('"api";r=9;t=10');
  });
});

describe('POST /hooks/:name (webhookGuard)', () => {
  it('accepts the right token', async () => {
    const { hook } = await start({ hookToken: TOKEN });
    const res = await hook(TOKEN, 'build-finished');
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ accepted: 'build-finished' });
  });

  it('answers 401 to 20 wrong tokens (the 20th starts the lockout) and a plain 429 from the 21st for 60 s', async () => {
    const { clock } = setup();
    const { hook } = await start({ hookToken: TOKEN, clock });
    for (let i = 1; i <= 20; i++) {
      const res = await hook(`wrong-${i}`);
      expect([res.status, await res.text()]).toEqual([401, 'Unauthorized']);
    }
    const limited = await hook('wrong-21');
    expect([limited.status, await limited.text()]).toEqual([429, 'Too Many Requests']);
    expect(limited.headers.get('retry-after')).toBe('60');
    expect(limited.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    clock.advance(30_000);
    expect((await hook()).headers.get('retry-after')).toBe('30');
    clock.advance(30_000);
    expect((await hook('wrong')).status).toBe(401);
  });

  it('lets a right token through during a lockout and clears the sender’s count', async () => {
    const { hook } = await start({ hookToken: TOKEN, clock: manualClock(0) });
    for (let i = 0; i < 20; i++) expect((await hook('wrong')).status).toBe(401);
    expect((await hook('wrong')).status).toBe(429);
    expect((await hook(TOKEN)).status).toBe(202);
    expect((await hook('wrong')).status).toBe(401);
  });

  it('routes only POST /hooks/<name>', async () => {
    const { url, hook } = await start({ hookToken: TOKEN });
    expect((await fetch(`${url}/hooks/deploy`)).status).toBe(404);
    expect((await hook(TOKEN, 'has.dot')).status).toBe(404);
    expect((await hook(TOKEN, 'x'.repeat(65))).status).toBe(404);
  });
});

describe('configuration', () => {
  it('takes the password and token from PASSWORD and HOOK_TOKEN, else the demo values', async () => {
    vi.stubEnv('PASSWORD', 'env-password');
    vi.stubEnv('HOOK_TOKEN', 'env-token');
    const fromEnv = await start();
    expect((await fromEnv.login('env-password')).status).toBe(200);
    expect((await fromEnv.hook('env-token')).status).toBe(202);
    vi.stubEnv('PASSWORD', '');
    vi.stubEnv('HOOK_TOKEN', '');
    const demo = await start();
    expect((await demo.login(DEMO_PASSWORD)).status).toBe(200);
    expect((await demo.hook(DEMO_HOOK_TOKEN)).status).toBe(202);
  });
});
