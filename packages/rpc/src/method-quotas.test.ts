import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { MemoryStore, methodRateLimitedError, type Store } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { describe, expect, it, vi } from 'vitest';
import { MethodRateLimitedError, PortcullisRpcError } from './errors.js';
import type { MethodIdentity } from './identity.js';
import {
  controlPlaneWriteMethods,
  type MethodQuotaOptions,
  withMethodQuotas,
} from './method-quotas.js';

interface Conn {
  deviceId?: string;
  clientIp?: string;
  connId?: string;
}

const alice: Conn = { deviceId: 'dev-alice', clientIp: '203.0.113.7', connId: 'c1' };

function setup(options: MethodQuotaOptions<unknown, Conn> = {}) {
  const clock = manualClock(0);
  const calls: string[] = [];
  const dispatch = vi.fn((method: string, _params: unknown, _ctx: Conn) => {
    calls.push(method);
    return `ok:${method}`;
  });
  const guarded = withMethodQuotas(dispatch, { clock, timers: clock, ...options });
  return { clock, calls, dispatch, guarded };
}

/** A store that forwards to `memory`, with some methods replaced (whatever Store's shape). */
function storeOver(memory: MemoryStore, overrides: Partial<Store>): Store {
  return new Proxy(memory, {
    get(target, prop) {
      if (Object.hasOwn(overrides, prop)) return overrides[prop as keyof Store];
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * Awaits a wrapped call that must be refused and returns the rejection. The call must return a
 * promise (never throw synchronously) and must reject with a MethodRateLimitedError.
 */
async function refusal(call: unknown): Promise<MethodRateLimitedError> {
  expect(call).toBeInstanceOf(Promise);
  try {
    await call;
  } catch (error) {
    expect(error).toBeInstanceOf(MethodRateLimitedError);
    return error as MethodRateLimitedError;
  }
  throw new Error('expected the call to be refused');
}

describe('controlPlaneWriteMethods', () => {
  it('is exactly the gateway write set, frozen', () => {
    expect(controlPlaneWriteMethods).toEqual([
      'config.apply',
      'config.patch',
      'plugins.install',
      'plugins.setEnabled',
      'plugins.uninstall',
      'update.run',
      'worktrees.*',
      'gateway.restart.request',
    ]);
    expect(Object.isFrozen(controlPlaneWriteMethods)).toBe(true);
  });
});

describe('withMethodQuotas (gateway defaults: 30 per 60 s per method per device + IP)', () => {
  it('30 calls of config.patch succeed; the 31st 10 s later fails with the exact shape', async () => {
    const { clock, guarded, dispatch } = setup();
    for (let i = 0; i < 30; i++)
      expect(await guarded('config.patch', { i }, alice)).toBe('ok:config.patch');
    expect(dispatch).toHaveBeenCalledTimes(30);
    clock.advance(10_000);
    const error = await refusal(guarded('config.patch', {}, alice));
    expect(dispatch).toHaveBeenCalledTimes(30);
    expect(error.retryAfterMs).toBe(50_000);
    expect(error.message).toBe('rate limit exceeded for config.patch; retry after 50s');
    expect(error.code).toBe('UNAVAILABLE');
    expect(error.retryable).toBe(true);
    expect(error.method).toBe('config.patch');
    expect(error.key).toBe('config.patch|dev-alice|203.0.113.7');
    const shape = {
      code: 'UNAVAILABLE',
      message: 'rate limit exceeded for config.patch; retry after 50s',
      retryable: true,
      retryAfterMs: 50_000,
      details: { method: 'config.patch', limit: '30 per 60s' },
    };
    expect(error.shape).toEqual(shape);
    expect(error.shape).toEqual(
      methodRateLimitedError('config.patch', 50_000, { limit: 30, windowMs: 60_000 }),
    );
    expect(error.toJSON()).toBe(error.shape);
    // Byte for byte, in the contract's field order.
    expect(JSON.stringify(error)).toBe(JSON.stringify(shape));
    expect(JSON.stringify(error)).toBe(
      '{"code":"UNAVAILABLE","message":"rate limit exceeded for config.patch; retry after 50s","retryable":true,"retryAfterMs":50000,"details":{"method":"config.patch","limit":"30 per 60s"}}',
    );
    expect(error).toBeInstanceOf(PortcullisRpcError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('MethodRateLimitedError');
  });

  it('rounds the seconds in the message up', async () => {
    const { clock, guarded } = setup();
    for (let i = 0; i < 30; i++) await guarded('config.patch', {}, alice);
    clock.advance(25_461);
    const error = await refusal(guarded('config.patch', {}, alice));
    expect(error.retryAfterMs).toBe(34_539);
    expect(error.message).toBe('rate limit exceeded for config.patch; retry after 35s');
  });

  it('a refused call does not count: refusals neither reach dispatch nor push the window back', async () => {
    const { clock, guarded, dispatch } = setup();
    for (let i = 0; i < 30; i++) await guarded('config.patch', {}, alice);
    for (let i = 0; i < 100; i++) {
      clock.advance(500);
      await refusal(guarded('config.patch', {}, alice));
    }
    clock.set(59_999);
    expect((await refusal(guarded('config.patch', {}, alice))).retryAfterMs).toBe(1);
    clock.set(60_000);
    // A new window at exactly +60 000 ms, with the full 30 (refusals were free).
    for (let i = 0; i < 30; i++)
      expect(await guarded('config.patch', {}, alice)).toBe('ok:config.patch');
    expect((await refusal(guarded('config.patch', {}, alice))).retryAfterMs).toBe(60_000);
    expect(dispatch).toHaveBeenCalledTimes(60);
  });

  it('the window is anchored at the first call, not at a clock boundary', async () => {
    const { clock, guarded } = setup();
    clock.set(12_345);
    for (let i = 0; i < 30; i++) await guarded('config.patch', {}, alice);
    clock.set(60_000);
    expect((await refusal(guarded('config.patch', {}, alice))).retryAfterMs).toBe(12_345);
    clock.set(72_345);
    expect(await guarded('config.patch', {}, alice)).toBe('ok:config.patch');
  });

  it('each method keeps its own 30: plugins.setEnabled is unaffected by config.patch', async () => {
    const { guarded } = setup();
    for (let i = 0; i < 30; i++) await guarded('config.patch', {}, alice);
    await refusal(guarded('config.patch', {}, alice));
    for (let i = 0; i < 30; i++) {
      expect(await guarded('plugins.setEnabled', {}, alice)).toBe('ok:plugins.setEnabled');
    }
    const error = await refusal(guarded('plugins.setEnabled', {}, alice));
    expect(error.message).toBe('rate limit exceeded for plugins.setEnabled; retry after 60s');
    expect(error.shape.details).toEqual({ method: 'plugins.setEnabled', limit: '30 per 60s' });
  });

  it('worktrees.create matches worktrees.* and has its own bucket within the namespace', async () => {
    const { guarded } = setup();
    expect(guarded.matches('worktrees.create')).toBe(true);
    for (let i = 0; i < 30; i++) await guarded('worktrees.create', {}, alice);
    const error = await refusal(guarded('worktrees.create', {}, alice));
    expect(error.shape.details).toEqual({ method: 'worktrees.create', limit: '30 per 60s' });
    expect(await guarded('worktrees.remove', {}, alice)).toBe('ok:worktrees.remove');
    expect(guarded.matches('worktrees')).toBe(false);
  });

  it.each(['config.get', 'chat.send', 'status', 'worktrees', 'config.patchX', 'Config.patch'])(
    'never limits the non-write method %s, and does not even ask who calls',
    async (method) => {
      const identity = vi.fn((c: Conn) => c);
      const { guarded, dispatch } = setup({ identity });
      for (let i = 0; i < 1000; i++) expect(await guarded(method, {}, alice)).toBe(`ok:${method}`);
      expect(dispatch).toHaveBeenCalledTimes(1000);
      expect(identity).not.toHaveBeenCalled();
      expect(guarded.limiter.size()).toBe(0);
    },
  );

  it('passes params, ctx and the result through untouched, always as a promise', async () => {
    const inner = (method: string, params: { n: number }, ctx: Conn) => ({ method, params, ctx });
    const guarded = withMethodQuotas(inner);
    const params = { n: 1 };
    const pending = guarded('config.apply', params, alice);
    expect(pending).toBeInstanceOf(Promise);
    const out = await pending;
    expect(out).toEqual({ method: 'config.apply', params, ctx: alice });
    expect(out.params).toBe(params);
    const free = guarded('config.get', params, alice);
    expect(free).toBeInstanceOf(Promise);
    expect((await free).method).toBe('config.get');
    await guarded.close();
  });

  it('an async dispatcher resolves as before; a throwing one still spends its slot', async () => {
    const clock = manualClock(0);
    const guarded = withMethodQuotas(
      async (method: string, params: { fail?: boolean }) => {
        if (params.fail) throw new Error('boom');
        return method;
      },
      { clock, timers: clock, limit: 2 },
    );
    await expect(guarded('config.patch', {}, alice)).resolves.toBe('config.patch');
    await expect(guarded('config.patch', { fail: true }, alice)).rejects.toThrow('boom');
    await refusal(guarded('config.patch', {}, alice));
  });

  it('two devices behind one IP have separate buckets; one device on two IPs too', async () => {
    const { guarded } = setup();
    const bob: Conn = { deviceId: 'dev-bob', clientIp: '203.0.113.7' };
    for (let i = 0; i < 30; i++) await guarded('config.patch', {}, alice);
    await refusal(guarded('config.patch', {}, alice));
    for (let i = 0; i < 30; i++)
      expect(await guarded('config.patch', {}, bob)).toBe('ok:config.patch');
    await refusal(guarded('config.patch', {}, bob));
    expect(await guarded('config.patch', {}, { ...alice, clientIp: '198.51.100.1' })).toBe(
      'ok:config.patch',
    );
  });

  it('canonicalises the IP: spellings of one address share a bucket', async () => {
    const { guarded } = setup({ limit: 2 });
    await guarded('config.patch', {}, { deviceId: 'd', clientIp: '::ffff:10.0.0.1' });
    await guarded('config.patch', {}, { deviceId: 'd', clientIp: '10.0.0.1' });
    expect(
      (await refusal(guarded('config.patch', {}, { deviceId: 'd', clientIp: '::FFFF:a00:1' }))).key,
    ).toBe('config.patch|d|10.0.0.1');
    expect(guarded.keyOf('config.patch', { deviceId: 'd', clientIp: '2001:DB8:0:0::1' })).toBe(
      'config.patch|d|2001:db8::/64',
    );
  });

  it.each<[string, Conn, string]>([
    [
      'device and IP',
      { deviceId: 'dev-1', clientIp: '10.0.0.1', connId: 'c9' },
      'config.patch|dev-1|10.0.0.1',
    ],
    ['no device', { clientIp: '10.0.0.1', connId: 'c9' }, 'config.patch|unknown-device|10.0.0.1'],
    ['no IP', { deviceId: 'dev-1', connId: 'c9' }, 'config.patch|dev-1|unknown-ip'],
    [
      'a garbage IP',
      { deviceId: 'dev-1', clientIp: '127.1', connId: 'c9' },
      'config.patch|dev-1|unknown-ip',
    ],
    [
      'neither: the connection id',
      { connId: 'c9' },
      'config.patch|unknown-device|unknown-ip|conn=c9',
    ],
    [
      'blank device, garbage IP: the connection id',
      { deviceId: '  ', clientIp: 'nope', connId: 'c9' },
      'config.patch|unknown-device|unknown-ip|conn=c9',
    ],
    ['nothing at all', {}, 'config.patch|unknown-device|unknown-ip'],
  ])('key with %s', async (_label, conn, key) => {
    const { guarded } = setup({ limit: 1 });
    expect(guarded.keyOf('config.patch', conn)).toBe(key);
    await guarded('config.patch', {}, conn);
    expect((await refusal(guarded('config.patch', {}, conn))).key).toBe(key);
  });

  it('anonymous connections get a bucket each; a known device ignores the connection id', async () => {
    const { guarded } = setup({ limit: 1 });
    await guarded('config.patch', {}, { connId: 'c1' });
    expect(await guarded('config.patch', {}, { connId: 'c2' })).toBe('ok:config.patch');
    await guarded('config.patch', {}, { deviceId: 'd', connId: 'c1' });
    await refusal(guarded('config.patch', {}, { deviceId: 'd', connId: 'c2' }));
  });

  it('uses a custom identity function', async () => {
    const identity = vi.fn(
      (ctx: { session: { device: string; ip: string } }): MethodIdentity => ({
        deviceId: ctx.session.device,
        clientIp: ctx.session.ip,
      }),
    );
    const guarded = withMethodQuotas(
      (m: string, _p: unknown, _c: { session: { device: string; ip: string } }) => m,
      {
        identity,
        limit: 1,
      },
    );
    const ctx = { session: { device: 'x', ip: '10.1.1.1' } };
    await guarded('update.run', {}, ctx);
    expect(identity).toHaveBeenCalledWith(ctx);
    expect((await refusal(guarded('update.run', {}, ctx))).key).toBe('update.run|x|10.1.1.1');
    await guarded.close();
  });

  it('a blocked bucket survives a flood of 20 000 other identities (maxEntries 10 000)', async () => {
    const { clock, guarded } = setup();
    for (let i = 0; i < 30; i++) await guarded('config.patch', {}, alice);
    clock.advance(1_000);
    for (let i = 0; i < 20_000; i++) {
      await guarded('config.patch', {}, { deviceId: `flood-${i}`, clientIp: '198.51.100.9' });
    }
    expect(guarded.limiter.size()).toBe(10_000);
    const error = await refusal(guarded('config.patch', {}, alice));
    expect(error.retryAfterMs).toBe(59_000);
    clock.set(60_000);
    expect(await guarded('config.patch', {}, alice)).toBe('ok:config.patch');
  });

  it('honours limit and windowMs, reported in details.limit', async () => {
    const { clock, guarded } = setup({ limit: 5, windowMs: 1_500, methods: ['admin.*'] });
    for (let i = 0; i < 5; i++) await guarded('admin.wipe', {}, alice);
    clock.advance(200);
    expect((await refusal(guarded('admin.wipe', {}, alice))).shape).toEqual({
      code: 'UNAVAILABLE',
      message: 'rate limit exceeded for admin.wipe; retry after 2s',
      retryable: true,
      retryAfterMs: 1_300,
      details: { method: 'admin.wipe', limit: '5 per 1.5s' },
    });
    expect(await guarded('config.patch', {}, alice)).toBe('ok:config.patch');
  });

  it('onLimited hears each refusal with the key, decision and error', async () => {
    const onLimited = vi.fn();
    const { guarded } = setup({ limit: 1, onLimited });
    await guarded('config.patch', { a: 1 }, alice);
    expect(onLimited).not.toHaveBeenCalled();
    const error = await refusal(guarded('config.patch', { a: 2 }, alice));
    expect(onLimited).toHaveBeenCalledTimes(1);
    expect(onLimited).toHaveBeenCalledWith({
      method: 'config.patch',
      params: { a: 2 },
      ctx: alice,
      key: 'config.patch|dev-alice|203.0.113.7',
      decision: {
        allowed: false,
        reason: 'limited',
        limit: 1,
        remaining: 0,
        retryAfterMs: 60_000,
        resetMs: 60_000,
        key: 'config.patch|dev-alice|203.0.113.7',
      },
      error,
      dryRun: false,
    });
  });

  it('publishes refusals on portcullis:limited under the name control-plane', async () => {
    const seen: unknown[] = [];
    const listener = (message: unknown) => seen.push(message);
    subscribe('portcullis:limited', listener);
    try {
      const { guarded } = setup({ limit: 1 });
      await guarded('config.patch', {}, alice);
      await refusal(guarded('config.patch', {}, alice));
      expect(seen).toEqual([
        expect.objectContaining({
          limiter: 'control-plane',
          decision: expect.objectContaining({
            reason: 'limited',
            key: 'config.patch|dev-alice|203.0.113.7',
          }),
        }),
      ]);
    } finally {
      unsubscribe('portcullis:limited', listener);
    }
  });

  it('dry run: counts and reports would-be refusals but always dispatches', async () => {
    const onLimited = vi.fn();
    const { clock, guarded, dispatch } = setup({ dryRun: true, onLimited });
    for (let i = 0; i < 30; i++) await guarded('config.patch', {}, alice);
    expect(onLimited).not.toHaveBeenCalled();
    clock.advance(10_000);
    expect(await guarded('config.patch', {}, alice)).toBe('ok:config.patch');
    expect(dispatch).toHaveBeenCalledTimes(31);
    expect(onLimited).toHaveBeenCalledTimes(1);
    const event = onLimited.mock.calls[0]?.[0];
    expect(event.dryRun).toBe(true);
    expect(event.decision).toMatchObject({ allowed: true, dryRun: true, reason: 'limited' });
    expect(event.error.shape).toEqual(
      methodRateLimitedError('config.patch', 50_000, { limit: 30, windowMs: 60_000 }),
    );
  });

  it('with an async store: resolves when allowed, rejects with the same error when refused', async () => {
    const clock = manualClock(0);
    const memory = new MemoryStore({ clock, timers: clock });
    const store = storeOver(memory, {
      consume: async (key, rule, cost) => memory.consume(key, rule, cost),
    });
    const dispatch = vi.fn((method: string) => method);
    const guarded = withMethodQuotas(dispatch, { store, limit: 1 });
    const first = guarded('config.patch', {}, alice);
    expect(first).toBeInstanceOf(Promise);
    await expect(first).resolves.toBe('config.patch');
    clock.advance(5_000);
    const second = guarded('config.patch', {}, alice);
    await expect(second).rejects.toBeInstanceOf(MethodRateLimitedError);
    await expect(second).rejects.toMatchObject({
      retryAfterMs: 55_000,
      message: 'rate limit exceeded for config.patch; retry after 55s',
    });
    expect(dispatch).toHaveBeenCalledTimes(1);
    // Keys in a shared store are namespaced by the limiter's name.
    expect([...memory.protectedKeys()].map((k) => k.key)).toEqual([
      'control-plane:config.patch|dev-alice|203.0.113.7',
    ]);
    await expect(guarded('config.get', {}, alice)).resolves.toBe('config.get');
  });

  it('a store that refuses with store-error answers the store-unavailable shape', async () => {
    const memory = new MemoryStore();
    const store = storeOver(memory, {
      consume: (key) => ({
        allowed: false,
        reason: 'store-error',
        limit: 30,
        remaining: 0,
        retryAfterMs: 0,
        resetMs: 0,
        key,
      }),
    });
    const dispatch = vi.fn();
    const guarded = withMethodQuotas(dispatch, { store });
    let thrown: unknown;
    try {
      await guarded('config.patch', {}, alice);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PortcullisRpcError);
    expect(thrown).not.toBeInstanceOf(MethodRateLimitedError);
    expect((thrown as PortcullisRpcError).shape).toEqual({
      code: 'UNAVAILABLE',
      message: 'rate limiter unavailable; retry later',
      retryable: true,
    });
    expect(dispatch).not.toHaveBeenCalled();
    memory.close();
  });

  it('close() stops the built-in store sweep timer', async () => {
    const { clock, guarded } = setup();
    await guarded('config.patch', {}, alice);
    expect(clock.pendingTimers()).toBe(1);
    await guarded.close();
    expect(clock.pendingTimers()).toBe(0);
  });
});
