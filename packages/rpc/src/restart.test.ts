import { createRestartScheduler, type RestartEvent } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { describe, expect, it, vi } from 'vitest';
import { MethodRateLimitedError, PortcullisRpcError } from './errors.js';
import { toJsonRpcError } from './json-rpc.js';
import { withMethodQuotas } from './method-quotas.js';
import { withRestartRequests } from './restart.js';

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
  const restart = (params?: unknown) =>
    guarded('gateway.restart.request', params, admin) as unknown;
  return { clock, restarts, scheduler, request, inner, guarded, restart };
}

describe('gateway.restart.request through the quota and the restart scheduler', () => {
  it('coalesces requests into one pending restart', () => {
    const { clock, restarts, restart, inner } = gateway();
    expect(restart({ reason: 'config' })).toEqual({
      coalesced: false,
      delayMs: 2_000,
      cooldownMsApplied: 0,
    });
    clock.advance(500);
    expect(restart({ reason: 'plugin' })).toEqual({
      coalesced: true,
      delayMs: 1_500,
      cooldownMsApplied: 0,
    });
    expect(restart({ delayMs: 10_000 })).toEqual({
      coalesced: true,
      delayMs: 1_500,
      cooldownMsApplied: 0,
    });
    clock.advance(1_499);
    expect(restarts).toEqual([]);
    clock.advance(1);
    expect(restarts).toEqual([{ at: 2_000, event: { reasons: ['config', 'plugin'] } }]);
    expect(inner).not.toHaveBeenCalled();
  });

  it('a request during the cooldown is scheduled after it, never rejected', () => {
    const { clock, restarts, restart } = gateway();
    restart();
    clock.set(2_000); // first restart runs
    clock.set(3_000);
    expect(restart()).toEqual({ coalesced: false, delayMs: 31_000, cooldownMsApplied: 29_000 });
    // An earlier request pulls the pending restart forward, but not into the cooldown.
    clock.set(4_000);
    expect(restart({ delayMs: 0 })).toEqual({
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
    expect(restart({ delayMs: 5_000 })).toEqual({
      coalesced: false,
      delayMs: 5_000,
      cooldownMsApplied: 0,
    });
  });

  it('each request costs one control-plane slot: 30 per 60 s, then refused before the scheduler', () => {
    const { clock, restart, request, guarded } = gateway();
    for (let i = 0; i < 30; i++) {
      restart();
      clock.advance(100);
    }
    expect(request).toHaveBeenCalledTimes(30);
    let error: unknown;
    try {
      restart();
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
    expect(guarded('config.patch', {}, admin)).toBe('ok:config.patch');
    expect(guarded('gateway.restart.request', {}, { ...admin, deviceId: 'other' })).toMatchObject({
      coalesced: true,
    });
  });

  it('passes other methods to the inner dispatcher', () => {
    const { guarded, inner, request } = gateway();
    expect(guarded('status', { x: 1 }, admin)).toBe('ok:status');
    expect(inner).toHaveBeenCalledWith('status', { x: 1 }, admin);
    expect(request).not.toHaveBeenCalled();
  });

  it.each<[unknown, string]>([
    ['now', 'params must be an object'],
    [[1], 'params must be an object'],
    [{ delayMs: '5' }, 'delayMs must be a number'],
    [{ delayMs: Number.NaN }, 'delayMs must be a number'],
    [{ reason: 42 }, 'reason must be a string'],
  ])('bad params %j: INVALID_REQUEST (JSON-RPC -32602), nothing scheduled', (params, problem) => {
    const { restart, request, scheduler } = gateway();
    let error: unknown;
    try {
      restart(params);
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
  });

  it('accepts null params and a custom method name', () => {
    const clock = manualClock(0);
    const scheduler = createRestartScheduler({ clock, timers: clock, onRestart: () => {} });
    const guarded = withRestartRequests(() => 'inner', { scheduler, method: 'admin.restart' });
    expect(guarded('admin.restart', null, undefined)).toEqual({
      coalesced: false,
      delayMs: 2_000,
      cooldownMsApplied: 0,
    });
    expect(guarded('gateway.restart.request', null, undefined)).toBe('inner');
    scheduler.close();
  });
});
