/*
 * Regression tests of @portcullis/rpc's hardening and of its promise contract (every wrapper
 * returns a promise; a refusal is a rejection): method names that are not strings, minted `.*`
 * names evicting buckets, IPv6 keyed by /64, user callbacks that throw or reject.
 */
import {
  createRestartScheduler,
  createSessionCreationLimiter,
  type Logger,
  MemoryStore,
} from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MethodRateLimitedError, PortcullisRpcError } from './errors.js';
import { toJsonRpcError } from './json-rpc.js';
import { MAX_METHOD_LENGTH } from './method-name.js';
import { type MethodQuotaOptions, withMethodQuotas } from './method-quotas.js';
import { withRestartRequests } from './restart.js';
import { withSessionCreationLimit } from './session-creation.js';

interface Conn {
  deviceId?: string;
  clientIp?: string;
  connId?: string;
}

const alice: Conn = { deviceId: 'dev-alice', clientIp: '203.0.113.7', connId: 'c1' };

/** A dispatcher that looks handlers up in a table, coercing whatever `method` it is given. */
function tableDispatcher() {
  const ran: string[] = [];
  const handlers: Record<string, () => string> = {
    'config.patch': () => 'patched',
    'session/new': () => 'session',
    'gateway.restart.request': () => 'restart handler',
    'config.get': () => 'config',
  };
  const dispatch = vi.fn((method: string) => {
    const handler = handlers[method as unknown as string];
    if (typeof handler !== 'function') throw new Error(`no handler for ${String(method)}`);
    ran.push(String(method));
    return handler();
  });
  return { ran, dispatch };
}

/** Settles every call and counts fulfilled vs rejected ones (by rejection constructor name). */
async function tally(calls: Promise<unknown>[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const r of await Promise.allSettled(calls)) {
    const k = r.status === 'fulfilled' ? 'ok' : (r.reason as Error).constructor.name;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

async function rejection(call: unknown): Promise<unknown> {
  expect(call).toBeInstanceOf(Promise);
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const invalidShape = (problem: string) => ({
  code: 'INVALID_REQUEST',
  message: `invalid request: ${problem}`,
  retryable: false,
  details: { code: 'INVALID_METHOD' },
});

describe('method names that are not strings never reach the dispatcher', () => {
  it('withMethodQuotas: ["config.patch"] 100 times is refused 100 times; config.patch keeps its 30', async () => {
    const clock = manualClock(0);
    const { dispatch, ran } = tableDispatcher();
    const guarded = withMethodQuotas(dispatch, { clock, timers: clock });
    const asArray = ['config.patch'] as unknown as string;
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 100; i++) calls.push(guarded(asArray, {}, alice));
    expect(await tally(calls)).toEqual({ PortcullisRpcError: 100 });
    expect(dispatch).not.toHaveBeenCalled();
    const error = (await rejection(guarded(asArray, {}, alice))) as PortcullisRpcError;
    expect(error).toBeInstanceOf(PortcullisRpcError);
    expect(error).not.toBeInstanceOf(MethodRateLimitedError);
    expect(error.shape).toEqual(invalidShape('method must be a string, got an array'));
    expect(toJsonRpcError(error, 9).error.code).toBe(-32600);
    // The real method still has exactly its 30.
    const real: Promise<unknown>[] = [];
    for (let i = 0; i < 100; i++) real.push(guarded('config.patch', {}, alice));
    expect(await tally(real)).toEqual({ ok: 30, MethodRateLimitedError: 70 });
    expect(ran).toHaveLength(30);
  });

  it('withSessionCreationLimit: ["session/new"] 50 times against a limit of 5 creates nothing', async () => {
    const clock = manualClock(0);
    const { dispatch } = tableDispatcher();
    const guarded = withSessionCreationLimit(dispatch, {
      clock,
      limit: 5,
      methods: ['session/new'],
    });
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 50; i++) calls.push(guarded(['session/new'] as never, {}, alice));
    expect(await tally(calls)).toEqual({ PortcullisRpcError: 50 });
    expect(dispatch).not.toHaveBeenCalled();
    const real: Promise<unknown>[] = [];
    for (let i = 0; i < 50; i++) real.push(guarded('session/new', {}, alice));
    expect(await tally(real)).toEqual({ ok: 5, Error: 45 });
  });

  it('withRestartRequests: a non-string method is refused, neither scheduled nor dispatched', async () => {
    const clock = manualClock(0);
    const scheduler = createRestartScheduler({ clock, timers: clock, onRestart: () => {} });
    const { dispatch } = tableDispatcher();
    const guarded = withRestartRequests(dispatch, { scheduler });
    const error = await rejection(guarded(['gateway.restart.request'] as never, {}, alice));
    expect((error as PortcullisRpcError).shape).toEqual(
      invalidShape('method must be a string, got an array'),
    );
    expect(scheduler.pending()).toBeUndefined();
    expect(dispatch).not.toHaveBeenCalled();
  });

  it.each<[string, unknown, string]>([
    ['a number', 42, 'method must be a string, got number'],
    ['null', null, 'method must be a string, got null'],
    ['undefined', undefined, 'method must be a string, got undefined'],
    ['an object', { toString: () => 'config.patch' }, 'method must be a string, got object'],
    ['a String object', new String('config.patch'), 'method must be a string, got object'],
    ['an empty string', '', 'method must not be empty'],
    ['257 characters', `worktrees.${'x'.repeat(247)}`, 'method must be at most 256 characters'],
    ['a newline', 'config.patch\n', 'method must not contain control characters'],
    ['a NUL', 'config.patch\u0000', 'method must not contain control characters'],
    ['DEL', 'config\u007fpatch', 'method must not contain control characters'],
    ['a C1 control', 'config\u0085patch', 'method must not contain control characters'],
    ['a line separator', 'config.patch\u2028', 'method must not contain control characters'],
  ])(
    'every wrapper refuses %s with the same INVALID_REQUEST shape',
    async (_label, method, problem) => {
      const clock = manualClock(0);
      const scheduler = createRestartScheduler({ clock, timers: clock, onRestart: () => {} });
      const dispatch = vi.fn(() => 'ran');
      const wrappers = [
        withMethodQuotas(dispatch, { clock, timers: clock }),
        withSessionCreationLimit(dispatch, { clock }),
        withRestartRequests(dispatch, { scheduler }),
      ];
      for (const guarded of wrappers) {
        const error = (await rejection(guarded(method as string, {}, alice))) as PortcullisRpcError;
        expect(error).toBeInstanceOf(PortcullisRpcError);
        expect(error.shape).toEqual(invalidShape(problem));
        // The refusal never echoes the name it refused.
        expect(error.message).not.toContain('config');
      }
      expect(dispatch).not.toHaveBeenCalled();
    },
  );

  it('hostile but well-formed strings are plain names: 256 characters, __proto__, constructor', async () => {
    const clock = manualClock(0);
    const dispatch = vi.fn((method: string) => `ran ${method.length}`);
    const free = withMethodQuotas(dispatch, { clock, timers: clock });
    expect(MAX_METHOD_LENGTH).toBe(256);
    await expect(free('x'.repeat(256), {}, alice)).resolves.toBe('ran 256');
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      expect(free.matches(name)).toBe(false);
      await expect(free(name, {}, alice)).resolves.toBe(`ran ${name.length}`);
    }
    expect(free.limiter.size()).toBe(0);
    // Listed, they are limited like any other name (the pattern table is a Set, not an object).
    const listed = withMethodQuotas(dispatch, {
      clock,
      timers: clock,
      limit: 1,
      methods: ['__proto__', 'constructor'],
    });
    await listed('__proto__', {}, alice);
    await listed('constructor', {}, alice);
    expect(await rejection(listed('__proto__', {}, alice))).toBeInstanceOf(MethodRateLimitedError);
    expect(await rejection(listed('constructor', {}, alice))).toBeInstanceOf(
      MethodRateLimitedError,
    );
    expect(listed.matches('toString')).toBe(false);
  });

  it('matches() is false and keyOf() throws INVALID_REQUEST for unusable names', async () => {
    const guarded = withMethodQuotas(() => null);
    expect(guarded.matches(['config.patch'] as never)).toBe(false);
    expect(guarded.matches('config.patch\n')).toBe(false);
    expect(() => guarded.keyOf(['config.patch'] as never, alice)).toThrow(
      'invalid request: method must be a string, got an array',
    );
    await guarded.close();
  });
});

describe('a caller cannot regain quota by minting method names', () => {
  it('10 000 junk worktrees.* names after 15 config.patch calls: config.patch still stops at 30', async () => {
    const clock = manualClock(0);
    const dispatch = vi.fn((method: string) => method);
    const onLimited = vi.fn();
    const guarded = withMethodQuotas(dispatch, { clock, timers: clock, onLimited });
    for (let i = 0; i < 15; i++) await guarded('config.patch', {}, alice);
    const junk: Promise<unknown>[] = [];
    for (let i = 0; i < 10_000; i++) junk.push(guarded(`worktrees.junk-${i}`, {}, alice));
    expect(await tally(junk)).toEqual({ ok: 16, MethodRateLimitedError: 9_984 });
    // 15 config.patch + 16 junk buckets: nothing was evicted.
    expect(guarded.limiter.size()).toBe(17);
    const error = (await rejection(
      guarded('worktrees.junk-x', {}, alice),
    )) as MethodRateLimitedError;
    expect(error.shape).toEqual({
      code: 'UNAVAILABLE',
      message: 'rate limit exceeded for worktrees.junk-x; retry after 60s',
      retryable: true,
      retryAfterMs: 60_000,
      details: { method: 'worktrees.junk-x', limit: '16 per 60s' },
    });
    expect(error.key).toBe('*|dev-alice|203.0.113.7');
    expect(onLimited).toHaveBeenLastCalledWith(
      expect.objectContaining({ key: '*|dev-alice|203.0.113.7', method: 'worktrees.junk-x' }),
    );
    const patches: Promise<unknown>[] = [];
    for (let i = 0; i < 200; i++) patches.push(guarded('config.patch', {}, alice));
    expect(await tally(patches)).toEqual({ ok: 15, MethodRateLimitedError: 185 });
    // Within the window: 15 + 15 = 30 config.patch calls ran, never more.
    expect(dispatch.mock.calls.filter(([m]) => m === 'config.patch')).toHaveLength(30);
  });

  it('a method the caller already has a bucket for costs nothing from the new-method budget', async () => {
    const clock = manualClock(0);
    const guarded = withMethodQuotas((m: string) => m, {
      clock,
      timers: clock,
      maxPatternMethods: 2,
    });
    for (let i = 0; i < 30; i++) await guarded('worktrees.create', {}, alice);
    for (let i = 0; i < 30; i++) await guarded('worktrees.remove', {}, alice);
    expect(await rejection(guarded('worktrees.create', {}, alice))).toMatchObject({
      message: 'rate limit exceeded for worktrees.create; retry after 60s',
    });
    expect(await rejection(guarded('worktrees.prune', {}, alice))).toMatchObject({
      message: 'rate limit exceeded for worktrees.prune; retry after 60s',
      shape: { details: { method: 'worktrees.prune', limit: '2 per 60s' } },
    });
    // Exact names never touch the budget; another caller has a budget of its own.
    await expect(guarded('config.patch', {}, alice)).resolves.toBe('config.patch');
    await expect(guarded('worktrees.prune', {}, { deviceId: 'bob' })).resolves.toBe(
      'worktrees.prune',
    );
    // A new window: new names again.
    clock.set(60_000);
    await expect(guarded('worktrees.prune', {}, alice)).resolves.toBe('worktrees.prune');
  });

  it('bound: one caller never holds more than exact names + 2 × maxPatternMethods buckets', async () => {
    const clock = manualClock(0);
    const guarded = withMethodQuotas((m: string) => m, {
      clock,
      timers: clock,
      maxPatternMethods: 4,
      maxEntries: 100,
    });
    let most = 0;
    for (let t = 0; t < 5 * 60_000; t += 1_000) {
      clock.set(t);
      for (let i = 0; i < 10; i++) {
        await guarded(`worktrees.t${t}-${i}`, {}, alice).catch(() => undefined);
      }
      for (const m of ['config.patch', 'config.apply', 'update.run']) {
        await guarded(m, {}, alice).catch(() => undefined);
      }
      (guarded.limiter.store as MemoryStore).sweep();
      most = Math.max(most, guarded.limiter.size() as number);
    }
    expect(most).toBeLessThanOrEqual(3 + 2 * 4);
  });

  it("another caller's half-spent bucket survives the flood (table of 50 entries)", async () => {
    const clock = manualClock(0);
    const dispatch = vi.fn((m: string) => m);
    const guarded = withMethodQuotas(dispatch, { clock, timers: clock, maxEntries: 50 });
    const bob: Conn = { deviceId: 'dev-bob', clientIp: '198.51.100.4' };
    for (let i = 0; i < 15; i++) await guarded('config.patch', {}, bob);
    for (let i = 0; i < 5_000; i++) {
      await guarded(`worktrees.junk-${i}`, {}, alice).catch(() => undefined);
    }
    const patches: Promise<unknown>[] = [];
    for (let i = 0; i < 100; i++) patches.push(guarded('config.patch', {}, bob));
    expect(await tally(patches)).toEqual({ ok: 15, MethodRateLimitedError: 85 });
  });

  it('with a shared store: the budget lives under <name>.new-methods: beside <name>:', async () => {
    const clock = manualClock(0);
    const store = new MemoryStore({ clock, timers: clock });
    const guarded = withMethodQuotas((m: string) => m, { store, maxPatternMethods: 1 });
    await guarded('worktrees.a', {}, alice);
    await expect(guarded('worktrees.b', {}, alice)).rejects.toBeInstanceOf(MethodRateLimitedError);
    expect([...store.protectedKeys()].map((k) => k.key)).toEqual([
      'control-plane.new-methods:*|dev-alice|203.0.113.7',
    ]);
    expect(guarded.patternLimiter?.name).toBe('control-plane.new-methods');
    store.close();
  });

  it('without any .* pattern there is no budget limiter', async () => {
    const guarded = withMethodQuotas(() => null, { methods: ['config.patch'] });
    expect(guarded.patternLimiter).toBeUndefined();
    await guarded.close();
  });
});

describe('an IPv6 client is keyed by its /64', () => {
  const rotating = (i: number): Conn => ({
    deviceId: 'dev-1',
    clientIp: `2001:db8:1:2:${(i + 1).toString(16)}::${i + 7}`,
  });

  it('one device rotating 5 addresses inside its /64 gets one quota of 30, not 150', async () => {
    const clock = manualClock(0);
    const guarded = withMethodQuotas((m: string) => m, { clock, timers: clock });
    const calls: Promise<unknown>[] = [];
    for (let round = 0; round < 30; round++) {
      for (let i = 0; i < 5; i++) calls.push(guarded('config.patch', {}, rotating(i)));
    }
    expect(await tally(calls)).toEqual({ ok: 30, MethodRateLimitedError: 120 });
    const error = (await rejection(
      guarded('config.patch', {}, rotating(3)),
    )) as MethodRateLimitedError;
    expect(error.key).toBe('config.patch|dev-1|2001:db8:1:2::/64');
    // Another /64 is another network.
    await expect(
      guarded('config.patch', {}, { deviceId: 'dev-1', clientIp: '2001:db8:1:3::1' }),
    ).resolves.toBe('config.patch');
  });

  it('ipv6Subnet: 48 widens the bucket; false keys each full address', async () => {
    const clock = manualClock(0);
    const wide = withMethodQuotas((m: string) => m, { clock, timers: clock, ipv6Subnet: 48 });
    expect(wide.keyOf('config.patch', { deviceId: 'd', clientIp: '2001:db8:1:ffff::1' })).toBe(
      'config.patch|d|2001:db8:1::/48',
    );
    const full = withMethodQuotas((m: string) => m, { clock, timers: clock, ipv6Subnet: false });
    const calls: Promise<unknown>[] = [];
    for (let round = 0; round < 31; round++) {
      for (let i = 0; i < 5; i++) calls.push(full('config.patch', {}, rotating(i)));
    }
    expect(await tally(calls)).toEqual({ ok: 150, MethodRateLimitedError: 5 });
    expect(full.keyOf('config.patch', rotating(0))).toBe('config.patch|dev-1|2001:db8:1:2:1::7');
    // IPv4 and IPv4-mapped addresses are whole addresses whatever the subnet.
    expect(wide.keyOf('config.patch', { deviceId: 'd', clientIp: '::ffff:203.0.113.7' })).toBe(
      'config.patch|d|203.0.113.7',
    );
  });
});

describe('user callbacks that throw or reject never escape', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  afterEach(async () => {
    // Give a stray rejection the turns it needs to be reported.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
    unhandled.length = 0;
    vi.restoreAllMocks();
  });

  function recordingLogger(): Logger & { lines: unknown[][] } {
    const lines: unknown[][] = [];
    return {
      lines,
      warn: (obj, msg) => lines.push(['warn', obj, msg]),
      error: (obj, msg) => lines.push(['error', obj, msg]),
    };
  }

  function limitedOnce(options: MethodQuotaOptions<unknown, Conn>) {
    const clock = manualClock(0);
    const dispatch = vi.fn((m: string) => m);
    const guarded = withMethodQuotas(dispatch, { clock, timers: clock, limit: 1, ...options });
    return { guarded, dispatch };
  }

  it('onLimited that throws: the refusal still arrives, the error goes to logger.error', async () => {
    const boom = new Error('hook broke');
    const logger = recordingLogger();
    const { guarded } = limitedOnce({
      logger,
      onLimited: () => {
        throw boom;
      },
    });
    await guarded('config.patch', {}, alice);
    const error = await rejection(guarded('config.patch', {}, alice));
    expect(error).toBeInstanceOf(MethodRateLimitedError);
    expect(logger.lines).toEqual([
      [
        'error',
        { code: 'PORTCULLIS_HOOK_ERROR', hook: 'onLimited', err: boom },
        'Portcullis: withMethodQuotas: onLimited threw; the call went on without it',
      ],
    ]);
  });

  it('onLimited that rejects: no unhandled rejection, the error is logged', async () => {
    const logger = recordingLogger();
    const { guarded } = limitedOnce({
      logger,
      onLimited: async () => Promise.reject(new Error('async hook')),
    });
    await guarded('config.patch', {}, alice);
    expect(await rejection(guarded('config.patch', {}, alice))).toBeInstanceOf(
      MethodRateLimitedError,
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]?.[1]).toMatchObject({ err: { message: 'async hook' } });
  });

  it('in dry-run mode a throwing onLimited does not stop the call', async () => {
    const logger = recordingLogger();
    const { guarded, dispatch } = limitedOnce({
      dryRun: true,
      logger,
      onLimited: () => {
        throw new Error('x');
      },
    });
    await guarded('config.patch', {}, alice);
    await expect(guarded('config.patch', {}, alice)).resolves.toBe('config.patch');
    expect(dispatch).toHaveBeenCalledTimes(2);
    expect(logger.lines).toHaveLength(1);
  });

  it('without a logger, or with a logger that throws too, a process warning is emitted', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const { guarded } = limitedOnce({
      onLimited: () => {
        throw new Error('no logger here');
      },
    });
    await guarded('config.patch', {}, alice);
    await rejection(guarded('config.patch', {}, alice));
    expect(warn).toHaveBeenCalledWith(
      'Portcullis: withMethodQuotas: onLimited threw; the call went on without it: Error: no logger here',
      { code: 'PORTCULLIS_HOOK_ERROR' },
    );
    warn.mockClear();
    const broken: Logger = {
      warn: () => {
        throw new Error('logger down');
      },
      error: () => {
        throw new Error('logger down');
      },
    };
    const second = limitedOnce({
      logger: broken,
      onLimited: () => {
        throw new Error('hook');
      },
    });
    await second.guarded('config.patch', {}, alice);
    await rejection(second.guarded('config.patch', {}, alice));
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]?.[0]).toBe(
      'Portcullis: withMethodQuotas: onLimited threw; the call went on without it: Error: hook',
    );
  });

  it('a logger that throws on the overflow warning does not turn the answer into an exception', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const clock = manualClock(0);
    const logger: Logger = {
      warn: () => {
        throw new Error('logger down');
      },
      error: () => {},
    };
    const guarded = withMethodQuotas((m: string) => m, {
      clock,
      timers: clock,
      limit: 1,
      maxEntries: 1,
      logger,
    });
    await guarded('config.patch', {}, alice); // the only bucket, now blocked
    const error = (await rejection(
      guarded('config.patch', {}, { deviceId: 'bob' }),
    )) as MethodRateLimitedError;
    expect(error).toBeInstanceOf(MethodRateLimitedError);
    expect(error.decision.reason).toBe('overflow');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/^Portcullis: the logger's warn\(\) threw/);
  });

  it('identity that throws or rejects fails the call (a rejection), uncounted and undispatched', async () => {
    const clock = manualClock(0);
    const dispatch = vi.fn((m: string) => m);
    let mode: 'throw' | 'reject' | 'ok' = 'throw';
    const guarded = withMethodQuotas(dispatch, {
      clock,
      timers: clock,
      limit: 1,
      identity: (ctx: Conn) => {
        if (mode === 'throw') throw new Error('identity broke');
        if (mode === 'reject') return Promise.reject(new Error('identity rejected'));
        return Promise.resolve(ctx);
      },
    });
    const thrown = guarded('config.patch', {}, alice);
    expect(thrown).toBeInstanceOf(Promise);
    await expect(thrown).rejects.toThrow('identity broke');
    mode = 'reject';
    await expect(guarded('config.patch', {}, alice)).rejects.toThrow('identity rejected');
    expect(guarded.limiter.size()).toBe(0);
    expect(dispatch).not.toHaveBeenCalled();
    // An async identity is awaited: the key is the resolved caller's.
    mode = 'ok';
    await expect(guarded('config.patch', {}, alice)).resolves.toBe('config.patch');
    await expect(guarded.keyOf('config.patch', alice)).resolves.toBe(
      'config.patch|dev-alice|203.0.113.7',
    );
    await expect(guarded('config.patch', {}, alice)).rejects.toBeInstanceOf(MethodRateLimitedError);
  });

  it('a dispatcher that throws synchronously is the call’s rejection, in every wrapper', async () => {
    const clock = manualClock(0);
    const scheduler = createRestartScheduler({ clock, timers: clock, onRestart: () => {} });
    const boom = new Error('handler broke');
    const dispatch = () => {
      throw boom;
    };
    for (const guarded of [
      withMethodQuotas(dispatch, { clock, timers: clock }),
      withSessionCreationLimit(dispatch, { clock }),
      withRestartRequests(dispatch, { scheduler }),
    ]) {
      for (const method of ['config.patch', 'session/new', 'config.get']) {
        expect(await rejection(guarded(method, {}, alice))).toBe(boom);
      }
    }
  });

  it('withSessionCreationLimit: isKnown throwing or rejecting fails the call, charges nothing', async () => {
    const clock = manualClock(0);
    const dispatch = vi.fn(() => 'ok');
    let mode: 'throw' | 'reject' = 'throw';
    const guarded = withSessionCreationLimit(dispatch, {
      clock,
      limit: 1,
      isKnown: () => {
        if (mode === 'throw') throw new Error('lookup broke');
        return Promise.reject(new Error('lookup rejected'));
      },
    });
    const first = guarded('session/new', {}, alice);
    expect(first).toBeInstanceOf(Promise);
    await expect(first).rejects.toThrow('lookup broke');
    mode = 'reject';
    await expect(guarded('session/new', {}, alice)).rejects.toThrow('lookup rejected');
    expect(guarded.limiter.peek()).toMatchObject({ remaining: 1 });
    expect(dispatch).not.toHaveBeenCalled();
  });

  it('withSessionCreationLimit: a throwing dry-run logger neither breaks nor blocks the call', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const clock = manualClock(0);
    const guarded = withSessionCreationLimit(() => 'ok', {
      clock,
      limit: 1,
      dryRun: true,
      logger: {
        warn: () => {
          throw new Error('logger down');
        },
        error: () => {},
      },
    });
    await guarded('session/new', {}, alice);
    await expect(guarded('session/new', {}, alice)).resolves.toBe('ok');
    expect(warn).toHaveBeenCalledTimes(1);
  });

  it('withRestartRequests: a scheduler that throws is the call’s rejection', async () => {
    const scheduler = {
      request: () => {
        throw new TypeError('scheduler broke');
      },
    };
    const guarded = withRestartRequests(() => 'ok', { scheduler: scheduler as never });
    const call = guarded('gateway.restart.request', {}, alice);
    expect(call).toBeInstanceOf(Promise);
    await expect(call).rejects.toThrow('scheduler broke');
  });
});

describe('every wrapper returns a promise; refusals are rejections', () => {
  it('dispatch(...).catch(handle) handles every refusal; nothing throws synchronously', async () => {
    const clock = manualClock(0);
    const scheduler = createRestartScheduler({ clock, timers: clock, onRestart: () => {} });
    const sessions = createSessionCreationLimiter({ clock, limit: 1 });
    const inner = (m: string) => `ok:${m}`;
    const guarded = withMethodQuotas(
      withRestartRequests(withSessionCreationLimit(inner, { limiter: sessions }), { scheduler }),
      { clock, timers: clock, limit: 1 },
    );
    const handled: string[] = [];
    const handle = (error: Error) => {
      handled.push(error.message);
      return 'handled';
    };
    const calls: [string, unknown][] = [
      ['config.patch', {}],
      ['config.patch', {}], // quota refusal
      ['session/new', {}],
      ['session/new', {}], // session-creation refusal
      ['gateway.restart.request', { reason: 7 }], // bad params
      [['config.patch'] as unknown as string, {}], // unusable method
      ['config.get', {}],
    ];
    const results: unknown[] = [];
    for (const [method, params] of calls) {
      let out: Promise<unknown> = Promise.resolve('not called');
      expect(() => {
        out = guarded(method as string, params, alice).catch(handle);
      }).not.toThrow();
      results.push(await out);
    }
    expect(results).toEqual([
      'ok:config.patch',
      'handled',
      'ok:session/new',
      'handled',
      'handled',
      'handled',
      'ok:config.get',
    ]);
    expect(handled).toEqual([
      'rate limit exceeded for config.patch; retry after 60s',
      'ACP session creation rate limit exceeded for session/new; retry after 10s.',
      'invalid gateway.restart.request params: reason must be a string',
      'invalid request: method must be a string, got an array',
    ]);
  });

  it('a synchronous dispatcher and the memory store still answer with a promise', () => {
    const clock = manualClock(0);
    const scheduler = createRestartScheduler({ clock, timers: clock, onRestart: () => {} });
    const inner = () => 'sync';
    expect(
      withMethodQuotas(inner, { clock, timers: clock })('config.get', {}, alice),
    ).toBeInstanceOf(Promise);
    expect(withSessionCreationLimit(inner, { clock })('session/new', {}, alice)).toBeInstanceOf(
      Promise,
    );
    expect(
      withRestartRequests(inner, { scheduler })('gateway.restart.request', {}, alice),
    ).toBeInstanceOf(Promise);
    scheduler.close();
  });
});
