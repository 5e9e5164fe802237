import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type AnyRequest, type App, type AppSpec, frameworks, limitHeaders } from './harness.js';

const T0 = 1_000_000;
const TEXT_TYPE = 'text/plain; charset=utf-8';

function checkToken(req: AnyRequest): 'ok' | 'invalid' | 'missing' {
  const token = req.headers['x-webhook-token'];
  return token === undefined ? 'missing' : token === 'right' ? 'ok' : 'invalid';
}

describe.each(frameworks)('webhookGuard — $name', (fw) => {
  let app: App | undefined;
  let clock: ManualClock;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  async function start(
    webhook: Partial<NonNullable<AppSpec['webhook']>> = {},
    behindProxy = true,
  ): Promise<App> {
    clock = manualClock(T0);
    app = await fw.build({
      webhook: {
        verify: checkToken,
        clock,
        timers: clock,
        ...(behindProxy && { trustedProxies: ['127.0.0.1'] }),
        ...webhook,
      },
    });
    return app;
  }
  /** A delivery from `ip` (through the trusted proxy), with a token unless `null`. */
  const deliver = (ip: string | undefined, token: string | null) =>
    app!.send({
      method: 'POST',
      path: '/webhook',
      headers: {
        ...(ip !== undefined && { 'x-forwarded-for': ip }),
        ...(token !== null && { 'x-webhook-token': token }),
      },
    });
  async function fail(ip: string | undefined, n: number, token: string | null = 'wrong') {
    for (let i = 0; i < n; i++) {
      const reply = await deliver(ip, token);
      expect(reply.status).toBe(401);
      expect(limitHeaders(reply)).toEqual({ 'content-type': TEXT_TYPE });
      expect(reply.text).toBe('Unauthorized');
    }
  }
  async function expectLimited(ip: string | undefined, token: string | null, retryAfter: string) {
    const reply = await deliver(ip, token);
    expect(reply.status).toBe(429);
    expect(limitHeaders(reply)).toEqual({ 'retry-after': retryAfter, 'content-type': TEXT_TYPE });
    expect(reply.text).toBe('Too Many Requests');
  }

  it('passes a delivery with the right token', async () => {
    await start();
    const reply = await deliver('203.0.113.9', 'right');
    expect(reply.status).toBe(200);
    expect(reply.text).toBe('ok');
  });

  it('answers 20 wrong tokens 401 (the 20th starts the lockout); the 21st gets a plain-text 429 with Retry-After: 60', async () => {
    await start();
    await fail('203.0.113.9', 20);
    await expectLimited('203.0.113.9', 'wrong', '60');
    clock.advance(20_500);
    await expectLimited('203.0.113.9', 'wrong', '40');
  });

  it('counts a missing token as a failure', async () => {
    await start();
    await fail('203.0.113.9', 10, null);
    await fail('203.0.113.9', 9);
    await fail('203.0.113.9', 1, null);
    await expectLimited('203.0.113.9', null, '60');
  });

  it('a right token resets the count', async () => {
    await start();
    await fail('203.0.113.9', 19);
    expect((await deliver('203.0.113.9', 'right')).status).toBe(200);
    await fail('203.0.113.9', 20);
    await expectLimited('203.0.113.9', 'wrong', '60');
  });

  it('a right token passes even during a lockout, and lifts it', async () => {
    await start();
    await fail('203.0.113.9', 20);
    await expectLimited('203.0.113.9', 'wrong', '60');
    expect((await deliver('203.0.113.9', 'right')).status).toBe(200);
    await fail('203.0.113.9', 20);
    await expectLimited('203.0.113.9', 'wrong', '60');
  });

  it('ends the lockout exactly 60 s after it started', async () => {
    await start();
    await fail('203.0.113.9', 20);
    await expectLimited('203.0.113.9', 'wrong', '60');
    clock.set(T0 + 59_999);
    await expectLimited('203.0.113.9', 'wrong', '1');
    clock.set(T0 + 60_000);
    await fail('203.0.113.9', 20);
    await expectLimited('203.0.113.9', 'wrong', '60');
  });

  it('does not exempt loopback senders', async () => {
    await start({}, false);
    await fail(undefined, 20);
    await expectLimited(undefined, 'wrong', '60');
  });

  it('leaves other senders unaffected', async () => {
    await start();
    await fail('203.0.113.9', 20);
    await expectLimited('203.0.113.9', 'wrong', '60');
    await fail('198.51.100.4', 1);
    expect((await deliver('198.51.100.4', 'right')).status).toBe(200);
  });

  it('takes failure-limiter options', async () => {
    clock = manualClock(T0);
    app = await fw.build({
      webhook: {
        verify: async (req) => checkToken(req),
        trustedProxies: ['127.0.0.1'],
        maxAttempts: 2,
        lockoutMs: 5_000,
        clock,
        timers: clock,
      },
    });
    await fail('203.0.113.9', 2);
    await expectLimited('203.0.113.9', 'wrong', '5');
  });
});
