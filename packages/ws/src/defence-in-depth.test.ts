import http from 'node:http';
import {
  authRateLimitedError,
  type LockoutEvent,
  PortcullisConfigError,
  type RawRequest,
} from '@portcullis/core';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { closeServer, listen, SECRET, tokenOutcome } from '../test/harness.js';
import { type ConnectAuth, createConnectAuth } from './index.js';

const LOCKED_REASON = 'unauthorized: too many failed authentication attempts (retry later)';

/** What the client saw: the server's last frame and the close. */
interface Reply {
  readonly frame: unknown;
  readonly code: number;
  readonly reason: string;
}

describe('createConnectAuth: defence in depth (docs/design.md#defence-in-depth)', () => {
  let server: http.Server | undefined;
  let wss: WebSocketServer | undefined;
  afterEach(async () => {
    if (server) await closeServer(server, wss);
    server = undefined;
  });

  /**
   * A gateway whose first frame is `{ user, token }`: the account goes to `attempt`, a refusal is
   * `refuse`d (the 3.2 frame, then close 1008), an accepted client gets `{ ok: true }` and a close.
   */
  async function gateway(): Promise<{
    auth: ConnectAuth;
    clock: ManualClock;
    events: LockoutEvent[];
    connect: (ip: string, user: string, token: string) => Promise<Reply>;
  }> {
    const clock = manualClock(1_000_000);
    const events: LockoutEvent[] = [];
    const auth = createConnectAuth({
      scope: 'password',
      trustedProxies: ['127.0.0.1'],
      clock,
      timers: clock,
      onLockout: (e) => events.push(e),
    });
    server = http.createServer();
    wss = new WebSocketServer({ server });
    wss.on('connection', (ws, req) => {
      ws.once('message', async (data) => {
        const hello = JSON.parse(String(data)) as { user?: string; token?: string };
        const result = await auth.attempt(req, tokenOutcome(hello.token), { account: hello.user });
        if (!result.ok) return auth.refuse(ws, result);
        ws.send(JSON.stringify({ ok: true }));
        ws.close(1000, 'welcome');
      });
    });
    const port = await listen(server);
    const connect = (ip: string, user: string, token: string) =>
      new Promise<Reply>((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}/`, {
          headers: { 'X-Forwarded-For': ip },
        });
        let frame: unknown;
        ws.on('open', () => ws.send(JSON.stringify({ user, token })));
        ws.on('message', (data) => {
          frame = JSON.parse(String(data));
        });
        ws.on('close', (code, reason) => resolve({ frame, code, reason: String(reason) }));
        ws.on('error', reject);
      });
    return { auth, clock, events, connect };
  }

  const welcome: Reply = { frame: { ok: true }, code: 1000, reason: 'welcome' };
  const refused = (retryAfterMs: number): Reply => ({
    frame: authRateLimitedError(retryAfterMs),
    code: 1008,
    reason: LOCKED_REASON,
  });

  it('pair: the 20th failure of one client against one account refuses that pair (the 3.2 frame, close 1008); its other accounts and the account’s other clients pass', async () => {
    const { clock, events, connect } = await gateway();
    for (let i = 0; i < 20; i++) {
      clock.advance(10_000); // never ten in the client layer's minute
      const reply = await connect('203.0.113.5', 'alice', 'wrong');
      expect(reply.code).toBe(1008);
      expect(reply.reason).toBe('unauthorized: invalid credentials');
    }
    expect(events).toEqual([
      {
        layer: 'pair',
        scope: 'password',
        key: '203.0.113.5',
        account: 'alice',
        lockoutMs: 3_600_000,
        until: 1_200_000 + 3_600_000,
      },
    ]);
    expect(await connect('203.0.113.5', 'alice', SECRET)).toStrictEqual(refused(3_600_000));
    expect(await connect('203.0.113.5', 'bob', SECRET)).toStrictEqual(welcome);
    expect(await connect('198.51.100.7', 'alice', SECRET)).toStrictEqual(welcome);
  });

  it('account: 100 failures from many clients put the account under attack; untrusted clients are refused, the trusted one passes', async () => {
    const { auth, clock, events, connect } = await gateway();
    expect(await connect('192.0.2.1', 'alice', SECRET)).toStrictEqual(welcome);
    clock.advance(1000);
    // The botnet, each address once (through the proxy: attempt directly, for speed).
    for (let i = 0; i < 100; i++) {
      const req: RawRequest = {
        socket: { remoteAddress: '127.0.0.1' },
        headers: { 'x-forwarded-for': `10.0.${i >> 8}.${i & 255}` },
      };
      const result = await auth.attempt(req, 'invalid', { account: 'alice' });
      expect(result.ok === false && result.reason).toBe('invalid');
    }
    expect(events.map((e) => [e.layer, e.key, e.account, e.lockoutMs])).toEqual([
      ['account', 'account:alice', 'alice', 3_600_000],
    ]);
    expect(await connect('198.51.100.9', 'alice', SECRET)).toStrictEqual(refused(3_600_000));
    expect(await connect('192.0.2.1', 'alice', SECRET)).toStrictEqual(welcome);
    expect(await connect('198.51.100.9', 'bob', SECRET)).toStrictEqual(welcome);
  });

  it('refuses an account option: the first frame names the account, attempt takes it', () => {
    let caught: unknown;
    try {
      createConnectAuth({ account: () => 'alice' } as never);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(PortcullisConfigError);
    expect(caught).toMatchObject({
      code: 'ERR_PORTCULLIS_UNKNOWN_OPTION',
      option: 'account',
      message:
        'createConnectAuth: unknown option "account" (the first frame names the account: pass it to attempt(req, outcome, { account }))',
    });
  });
});
