// Access lists in the WebSocket guards (docs/design.md#access-lists): createConnectAuth refuses a
// denied client or account before the frame's credential counts (ACCESS_DENIED, close 1008, the
// reason cut to what a close frame holds), and guardUpgrade answers a denied handshake 403.
import http from 'node:http';
import {
  accessDeniedError,
  createAccessList,
  MemoryStore,
  type RawRequest,
} from '@portcullis/core';
import { isPromise } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { closeServer, listen } from '../test/harness.js';
import { type ConnectAuthResult, createConnectAuth, guardUpgrade } from './index.js';

const request = (ip: string, headers: Record<string, string> = {}): RawRequest => ({
  socket: { remoteAddress: ip },
  headers,
});

function setup() {
  const clock = manualClock(5_000);
  const store = new MemoryStore({ clock, timers: clock });
  const access = createAccessList({ store, clock, timers: clock });
  const auth = createConnectAuth({ clock, timers: clock, access, accountLimits: {} });
  const attempt = (req: RawRequest, outcome: 'ok' | 'invalid', account?: string) => {
    const r = auth.attempt(req, outcome, account === undefined ? undefined : { account });
    if (isPromise(r)) throw new Error('expected a synchronous result with the memory store');
    return r as ConnectAuthResult;
  };
  return { access, auth, attempt, clock };
}

describe('createConnectAuth with an access list', () => {
  it('refuses a denied address with ACCESS_DENIED and close 1008, counting nothing', async () => {
    const { access, auth, attempt } = setup();
    await access.deny('203.0.113.0/24', { reason: 'stuffing' });
    for (let i = 0; i < 20; i++)
      expect(attempt(request('203.0.113.7'), 'invalid')).toStrictEqual({
        ok: false,
        reason: 'denied',
        error: accessDeniedError('stuffing', 0),
        closeCode: 1008,
        closeReason: 'access denied: stuffing',
        decision: {
          allowed: false,
          reason: 'denied',
          limit: 10,
          remaining: 0,
          retryAfterMs: 0,
          resetMs: 0,
          key: '203.0.113.7',
        },
      });
    await access.remove('203.0.113.0/24');
    expect(attempt(request('203.0.113.7'), 'ok').ok).toBe(true);
    expect(auth.limiter.lockouts({})).toEqual([]);
  });

  it('refuses a denied account named by the frame, and cuts a long reason to 123 bytes', async () => {
    const { access, attempt } = setup();
    const reason = 'é'.repeat(100);
    await access.deny('account:laptop-1', { reason });
    const r = attempt(request('198.51.100.1'), 'ok', 'laptop-1');
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason).toBe('denied');
    expect(r.error).toEqual(accessDeniedError(reason, 0));
    expect(Buffer.byteLength(r.closeReason)).toBeLessThanOrEqual(123);
    expect(r.closeReason).toBe(`access denied: ${'é'.repeat(52)}...`);
    expect(attempt(request('198.51.100.1'), 'ok', 'phone-2').ok).toBe(true);
  });

  it('an allow rule does not lift the lockout', async () => {
    const { access, attempt } = setup();
    await access.allow('203.0.113.7');
    for (let i = 0; i < 10; i++) attempt(request('203.0.113.7'), 'invalid');
    const r = attempt(request('203.0.113.7'), 'ok');
    expect(r.ok ? 'ok' : r.reason).toBe('rate_limited');
  });
});

describe('guardUpgrade with an access list', () => {
  let server: http.Server | undefined;
  afterEach(async () => {
    if (server) await closeServer(server);
    server = undefined;
  });

  it('answers a denied handshake 403 ACCESS_DENIED, before verify', async () => {
    const access = createAccessList();
    await access.deny('127.0.0.1', { reason: 'maintenance' });
    server = http.createServer();
    const wss = new WebSocketServer({ noServer: true });
    let verified = 0;
    guardUpgrade(server, wss, {
      access,
      verify: () => {
        verified++;
        return 'ok';
      },
    });
    const port = await listen(server);
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({
        port,
        host: '127.0.0.1',
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        },
      });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (c) => {
          body += c;
        });
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
      });
      req.on('upgrade', () => reject(new Error('upgraded')));
      req.on('error', reject);
      req.end();
    });
    expect(res).toEqual({
      status: 403,
      body: JSON.stringify(accessDeniedError('maintenance', 0)),
    });
    expect(verified).toBe(0);
    await access.close();
  });
});
