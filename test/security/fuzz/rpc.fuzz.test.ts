/*
 * Hostile method names at the RPC wrappers: anything JSON (or a careless caller) can put in
 * `method`. Every call settles (no synchronous throw), a name that is not a plain string is never
 * dispatched, and no spelling of a limited method gets past its quota.
 */
import { createRestartScheduler } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { withMethodQuotas, withRestartRequests, withSessionCreationLimit } from '@portcullis/rpc';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const RUNS = 2_000;

/** Values that coerce to a limited method's name in a handler table, and other junk. */
const method = fc.oneof(
  fc.constantFrom(
    ['config.patch'],
    [['config.patch']],
    { toString: () => 'config.patch' },
    ['session/new'],
    ['gateway.restart.request'],
    '__proto__',
    'constructor',
    'config.patch\u0000',
    'config.patch\n',
    '',
    'x'.repeat(10_000),
  ),
  fc.constantFrom('config.patch', 'session/new', 'gateway.restart.request', 'config.get'),
  fc.string({ maxLength: 40 }),
  fc.anything(),
);

/** A dispatcher that looks handlers up in a plain object, coercing whatever it is given. */
function table() {
  const ran: Record<string, number> = {};
  const handlers: Record<string, () => string> = {
    'config.patch': () => 'patched',
    'session/new': () => 'session',
    'gateway.restart.request': () => 'restart',
    'config.get': () => 'config',
  };
  const dispatch = (m: string) => {
    const key = String(m);
    const handler = Object.hasOwn(handlers, key) ? handlers[key] : undefined;
    if (handler === undefined) throw new Error('no such method');
    ran[key] = (ran[key] ?? 0) + 1;
    return handler();
  };
  return { ran, dispatch };
}

describe('fuzz: method names at the RPC wrappers', () => {
  it('never throw synchronously, never dispatch a non-string, never exceed a quota', async () => {
    const clock = manualClock(0);
    const { ran, dispatch } = table();
    const quotas = withMethodQuotas(dispatch, { clock, timers: clock });
    const sessions = withSessionCreationLimit(quotas, { limit: 5, clock });
    const scheduler = createRestartScheduler({ onRestart: () => {}, clock, timers: clock });
    const guarded = withRestartRequests(sessions, { scheduler });
    const conn = { deviceId: 'dev-1', clientIp: '203.0.113.7', connId: 'c1' };
    let calls = 0;
    await fc.assert(
      fc.asyncProperty(method, async (m) => {
        calls++;
        let result: unknown;
        expect(() => {
          result = guarded(m as string, {}, conn);
        }).not.toThrow();
        expect(result).toBeInstanceOf(Promise);
        const settled = await Promise.allSettled([result]);
        if (typeof m !== 'string') expect(settled[0]?.status).toBe('rejected');
      }),
      { numRuns: RUNS },
    );
    expect(calls).toBe(RUNS);
    // The window never moved: every limited method ran at most its quota, whatever was sent.
    expect(ran['config.patch'] ?? 0).toBeLessThanOrEqual(30);
    expect(ran['session/new'] ?? 0).toBeLessThanOrEqual(5);
    expect(ran['gateway.restart.request'] ?? 0).toBeLessThanOrEqual(30);
    scheduler.close();
  });
});
