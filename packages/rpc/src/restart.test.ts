import { createRestartScheduler, type RestartEvent } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { describe, expect, it, vi } from 'vitest';
import { MethodRateLimitedError, PortcullisRpcError } from './errors.js';
import { toJsonRpcError } from './json-rpc.js';
import { withMethodQuotas } from './method-quotas.js';
import { DROPPED_REASONS_MARKER, withRestartRequests } from './restart.js';

const admin = { deviceId: 'dev-admin', clientIp: '10.0.0.2' };

function gateway() {
  const clock = manualClock(0);
  const restarts: { at: number; event: RestartEvent }[] = [];
  const scheduler = createRestartScheduler({
    clock,
    timers: clock,
    onRestart: (event) => {
      restarts.push({ at: clock.now(), event });
    },
  });
  const request = vi.spyOn(scheduler, 'request');
  const inner = vi.fn((method: string) => `ok:${method}`);
  const guarded = withMethodQuotas(withRestartRequests(inner, { scheduler }), {
    clock,
    timers: clock,
  });
  const restart = (params?: unknown) => guarded('gateway.restart.request', params, admin);
  return { clock, restarts, scheduler, request, inner, guarded, restart };
}

describe('gateway.restart.request through the quota and the restart scheduler', () => {
  it('coalesces requests into one pending restart', async () => {
    const { clock, restarts, restart, inner } = gateway();
    expect(await restart({ reason: 'config' })).toEqual({
      coalesced: false,
      delayMs: 2_000,
      cooldownMsApplied: 0,
    });
    clock.advance(500);
    expect(await restart({ reason: 'plugin' })).toEqual({
      coalesced: true,
      delayMs: 1_500,
      cooldownMsApplied: 0,
    });
    expect(await restart({ delayMs: 10_000 })).toEqual({
      coalesced: true,
      delayMs: 1_500,
      cooldownMsApplied: 0,
    });
    clock.advance(1_499);
    expect(restarts).toEqual([]);
    clock.advance(1);
    expect(restarts).toEqual([
      { at: 2_000, event: expect.objectContaining({ reasons: ['config', 'plugin'] }) },
    ]);
    expect(inner).not.toHaveBeenCalled();
  });

  it('a request during the cooldown is scheduled after it, never rejected', async () => {
    const { clock, restarts, restart } = gateway();
    await restart();
    clock.set(2_000); // first restart runs
    clock.set(3_000);
    expect(await restart()).toEqual({
      coalesced: false,
      delayMs: 31_000,
      cooldownMsApplied: 29_000,
    });
    // An earlier request pulls the pending restart forward, but not into the cooldown.
    clock.set(4_000);
    expect(await restart({ delayMs: 0 })).toEqual({
      coalesced: true,
      delayMs: 28_000,
      cooldownMsApplied: 28_000,
    });
    clock.set(31_999);
    expect(restarts.map((r) => r.at)).toEqual([2_000]);
    clock.set(32_000);
    expect(restarts.map((r) => r.at)).toEqual([2_000, 32_000]); // exactly 30 s apart
    // Long after, no cooldown applies any more.
    clock.set(100_000);
    expect(await restart({ delayMs: 5_000 })).toEqual({
      coalesced: false,
      delayMs: 5_000,
      cooldownMsApplied: 0,
    });
  });

  it('each request costs one control-plane slot: 30 per 60 s, then refused before the scheduler', async () => {
    const { clock, restart, request, guarded } = gateway();
    for (let i = 0; i < 30; i++) {
      await restart();
      clock.advance(100);
    }
    expect(request).toHaveBeenCalledTimes(30);
    let error: unknown;
    try {
      await restart();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(MethodRateLimitedError);
    expect((error as MethodRateLimitedError).shape).toEqual({
      code: 'UNAVAILABLE',
      message: 'rate limit exceeded for gateway.restart.request; retry after 57s',
      retryable: true,
      retryAfterMs: 57_000,
      details: { method: 'gateway.restart.request', limit: '30 per 60s' },
    });
    expect(request).toHaveBeenCalledTimes(30);
    // The slot is the restart method's own: other writes and other devices are unaffected.
    expect(await guarded('config.patch', {}, admin)).toBe('ok:config.patch');
    expect(
      await guarded('gateway.restart.request', {}, { ...admin, deviceId: 'other' }),
    ).toMatchObject({
      coalesced: true,
    });
  });

  it('passes other methods to the inner dispatcher', async () => {
    const { guarded, inner, request } = gateway();
    expect(await guarded('status', { x: 1 }, admin)).toBe('ok:status');
    expect(inner).toHaveBeenCalledWith('status', { x: 1 }, admin);
    expect(request).not.toHaveBeenCalled();
  });

  it.each<[unknown, string]>([
    ['now', 'params must be an object'],
    [[1], 'params must be an object'],
    [{ delayMs: '5' }, 'delayMs must be a number'],
    [{ delayMs: Number.NaN }, 'delayMs must be a number'],
    [{ reason: 42 }, 'reason must be a string'],
  ])(
    'bad params %j: INVALID_REQUEST (JSON-RPC -32602), nothing scheduled',
    async (params, problem) => {
      const { restart, request, scheduler } = gateway();
      let error: unknown;
      try {
        await restart(params);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(PortcullisRpcError);
      const shape = {
        code: 'INVALID_REQUEST',
        message: `invalid gateway.restart.request params: ${problem}`,
        retryable: false,
      };
      expect((error as PortcullisRpcError).shape).toEqual(shape);
      expect(toJsonRpcError(error as PortcullisRpcError, 4)).toEqual({
        jsonrpc: '2.0',
        id: 4,
        error: { code: -32602, message: shape.message, data: shape },
      });
      expect(request).not.toHaveBeenCalled();
      expect(scheduler.pending()).toBeUndefined();
    },
  );

  it('accepts null params and a custom method name', async () => {
    const clock = manualClock(0);
    const scheduler = createRestartScheduler({ clock, timers: clock, onRestart: () => {} });
    const guarded = withRestartRequests(() => 'inner', { scheduler, method: 'admin.restart' });
    expect(await guarded('admin.restart', null, undefined)).toEqual({
      coalesced: false,
      delayMs: 2_000,
      cooldownMsApplied: 0,
    });
    expect(await guarded('gateway.restart.request', null, undefined)).toBe('inner');
    scheduler.close();
  });
});

describe('restart reasons from the wire are bounded', () => {
  function direct(options: { maxReasons?: number; maxReasonLength?: number } = {}) {
    const clock = manualClock(0);
    const events: RestartEvent[] = [];
    const seenInside: unknown[] = [];
    const scheduler = createRestartScheduler({
      clock,
      timers: clock,
      onRestart: (event) => {
        events.push(event);
        seenInside.push(guarded.reasons());
      },
    });
    const guarded = withRestartRequests(() => 'inner', { scheduler, ...options });
    const restart = (params?: unknown) => guarded('gateway.restart.request', params, admin);
    return { clock, events, seenInside, scheduler, guarded, restart };
  }

  it('100 000 requests with 1 KB reasons: 16 reasons of at most 256 characters reach the scheduler', async () => {
    const { clock, events, seenInside, scheduler, guarded, restart } = direct();
    for (let i = 0; i < 100_000; i++) {
      await restart({ reason: `${String(i).padStart(6, '0')}${'r'.repeat(1_018)}` });
    }
    const pending = scheduler.pending()?.reasons ?? [];
    expect(pending).toHaveLength(17);
    expect(pending[16]).toBe(DROPPED_REASONS_MARKER);
    for (const reason of pending.slice(0, 16)) {
      expect(reason).toHaveLength(256);
      expect(reason.endsWith('r…')).toBe(true);
    }
    expect(pending[0]?.startsWith('000000rrr')).toBe(true);
    expect(pending[15]?.startsWith('000015rrr')).toBe(true);
    const summary = guarded.reasons();
    expect(summary.reasons).toEqual(pending.slice(0, 16));
    expect(summary.dropped).toBe(99_984);
    // onRestart gets the bounded list and can still read the drop count.
    clock.advance(2_000);
    expect(events).toHaveLength(1);
    expect(events[0]?.reasons).toEqual(pending);
    expect(seenInside).toEqual([{ reasons: pending.slice(0, 16), dropped: 99_984 }]);
    // The next pending restart starts from nothing.
    await restart({ reason: 'next' });
    expect(guarded.reasons()).toEqual({ reasons: ['next'], dropped: 0 });
    expect(scheduler.pending()?.reasons).toEqual(['next']);
    scheduler.close();
  });

  it('repeats are passed once; control characters become spaces; the cut never splits a pair', async () => {
    const { scheduler, guarded, restart } = direct({ maxReasonLength: 8 });
    await restart({ reason: 'config' });
    await restart({ reason: 'config' });
    await restart({ reason: 'a\nb\u0000c\u2028d' });
    await restart({ reason: 'abcdefghij' });
    await restart({ reason: 'abcdef\u{1F600}x' }); // the emoji's pair straddles the cut
    await restart({ reason: '' });
    await restart({});
    const kept = ['config', 'a b c d', 'abcdefg…', 'abcdef…', ''];
    expect(scheduler.pending()?.reasons).toEqual(kept);
    expect(guarded.reasons()).toEqual({ reasons: kept, dropped: 0 });
    scheduler.close();
  });

  it('maxReasons: later new reasons are dropped and counted; a repeat of a kept one is free', async () => {
    const { scheduler, guarded, restart } = direct({ maxReasons: 2 });
    for (const reason of ['a', 'b', 'c', 'a', 'd', 'b', 'e']) await restart({ reason });
    expect(scheduler.pending()?.reasons).toEqual(['a', 'b', DROPPED_REASONS_MARKER]);
    expect(guarded.reasons()).toEqual({ reasons: ['a', 'b'], dropped: 3 });
    scheduler.close();
    // Closing the scheduler ends the cycle too.
    await restart({ reason: 'z' });
    expect(guarded.reasons()).toEqual({ reasons: ['z'], dropped: 0 });
    scheduler.close();
  });

  it('a scheduler with only request(): a new cycle is seen from coalesced: false', async () => {
    const got: (string | undefined)[] = [];
    let pending = false;
    const scheduler = {
      request: (req: { reason?: string }) => {
        got.push(req.reason);
        const coalesced = pending;
        pending = true;
        return { coalesced, delayMs: 0, cooldownMsApplied: 0 };
      },
    };
    const guarded = withRestartRequests(() => 'inner', {
      scheduler: scheduler as never,
      maxReasons: 1,
    });
    await guarded('gateway.restart.request', { reason: 'a' }, admin);
    await guarded('gateway.restart.request', { reason: 'b' }, admin);
    await guarded('gateway.restart.request', { reason: 'c' }, admin);
    expect(got).toEqual(['a', DROPPED_REASONS_MARKER, undefined]);
    expect(guarded.reasons()).toEqual({ reasons: ['a'], dropped: 2 });
    pending = false; // the restart ran
    await guarded('gateway.restart.request', { reason: 'a' }, admin);
    expect(guarded.reasons()).toEqual({ reasons: [], dropped: 0 });
  });

  it('a reason that is not a string is refused (INVALID_REQUEST), never stored', async () => {
    const { scheduler, restart } = direct();
    for (const reason of [42, ['x'], { toString: () => 'x' }, null]) {
      await expect(restart({ reason })).rejects.toMatchObject({
        shape: {
          code: 'INVALID_REQUEST',
          message: 'invalid gateway.restart.request params: reason must be a string',
          retryable: false,
        },
      });
    }
    expect(scheduler.pending()).toBeUndefined();
  });

  it('skipDeferral: only the boolean true reaches the scheduler; other values wait as usual', async () => {
    const clock = manualClock(0);
    const restarts: number[] = [];
    const scheduler = createRestartScheduler({
      clock,
      timers: clock,
      pendingWork: () => 3,
      onRestart: () => {
        restarts.push(clock.now());
      },
    });
    const request = vi.spyOn(scheduler, 'request');
    const guarded = withRestartRequests(vi.fn(), { scheduler });
    for (const skipDeferral of ['true', 1, 'yes', null, false]) {
      await guarded('gateway.restart.request', { delayMs: 0, skipDeferral }, admin);
    }
    expect(request.mock.calls.map(([ask]) => ask)).toEqual(Array(5).fill({ delayMs: 0 }));
    clock.advance(1_000);
    expect(restarts).toEqual([]);
    expect(scheduler.pending()).toMatchObject({ deferred: true });
    await guarded('gateway.restart.request', { delayMs: 0, skipDeferral: true }, admin);
    expect(request).toHaveBeenLastCalledWith({ delayMs: 0, skipDeferral: true });
    clock.advance(0);
    expect(restarts).toEqual([1_000]);
  });
});
