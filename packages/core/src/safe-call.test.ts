import { afterEach, describe, expect, it, vi } from 'vitest';
import { HOOK_ERROR, reportHookError } from './safe-call.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('reportHookError', () => {
  it('logs the hook, its error and the context under PORTCULLIS_HOOK_ERROR', () => {
    const boom = new Error('boom');
    const error = vi.fn();
    reportHookError({ error }, { hook: 'onLimited', err: boom, limiter: 'x' }, 'the hook threw');
    expect(HOOK_ERROR).toBe('PORTCULLIS_HOOK_ERROR');
    expect(error).toHaveBeenCalledWith(
      { code: 'PORTCULLIS_HOOK_ERROR', hook: 'onLimited', err: boom, limiter: 'x' },
      'the hook threw',
    );
  });

  it('without a logger, or when it throws or rejects, emits a process warning with the same code', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const err = new Error('boom');
    reportHookError(undefined, { hook: 'onRefused', err }, 'm1');
    reportHookError(
      {
        error: () => {
          throw new Error('logger down');
        },
      },
      { hook: 'onRefused', err },
      'm2',
    );
    reportHookError(
      { error: () => Promise.reject(new Error('later')) },
      { hook: 'h', err: 7 },
      'm3',
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(warn.mock.calls).toEqual([
      ['m1: Error: boom', { code: 'PORTCULLIS_HOOK_ERROR' }],
      ['m2: Error: boom', { code: 'PORTCULLIS_HOOK_ERROR' }],
      ['m3: 7', { code: 'PORTCULLIS_HOOK_ERROR' }],
    ]);
  });

  it('never throws, even when the warning cannot be emitted', () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => {
      throw new Error('no warnings either');
    });
    expect(() => reportHookError(undefined, { hook: 'h', err: 'x' }, 'm')).not.toThrow();
  });
});
