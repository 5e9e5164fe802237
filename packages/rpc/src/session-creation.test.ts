import { createSessionCreationLimiter } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { describe, expect, it, vi } from 'vitest';
import { PortcullisRpcError } from './errors.js';
import { sessionOpeningMethods, withSessionCreationLimit } from './session-creation.js';

interface SessionParams {
  sessionId?: string;
}

/** An ACP-like agent: `session/new` creates an id, `session/load` re-opens one. */
function agent() {
  const sessions = new Set<string>();
  let next = 0;
  const dispatch = vi.fn((method: string, params: SessionParams, _ctx: unknown) => {
    if (method === 'session/new') {
      const sessionId = `s${++next}`;
      sessions.add(sessionId);
      return { sessionId };
    }
    if (method === 'session/load') {
      sessions.add(params.sessionId ?? '');
      return { sessionId: params.sessionId };
    }
    return { method };
  });
  const isKnown = (params: SessionParams) => sessions.has(params?.sessionId ?? '');
  return { sessions, dispatch, isKnown };
}

/** Awaits a wrapped call that must be refused (as a rejection, never a synchronous throw). */
async function thrown(call: unknown): Promise<Error> {
  expect(call).toBeInstanceOf(Promise);
  try {
    await call;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the call to be rejected');
}

describe('withSessionCreationLimit (120 new sessions per 10 s per limiter instance)', () => {
  it('120 new sessions in 10 s pass; the 121st fails with the exact core message', async () => {
    const clock = manualClock(0);
    const { dispatch, isKnown } = agent();
    const guarded = withSessionCreationLimit(dispatch, { isKnown, clock });
    for (let i = 0; i < 120; i++) {
      expect(await guarded('session/new', {}, undefined)).toEqual({ sessionId: `s${i + 1}` });
      clock.advance(75); // 120 creations spread over 9 s
    }
    expect(clock.now()).toBe(9_000);
    const error = await thrown(guarded('session/new', {}, undefined));
    expect(error.message).toBe(
      'ACP session creation rate limit exceeded for session/new; retry after 1s.',
    );
    expect(error.constructor).toBe(Error);
    expect(error).not.toBeInstanceOf(PortcullisRpcError);
    expect(Object.keys(error)).toEqual([]); // no structured retry field
    expect(dispatch).toHaveBeenCalledTimes(120);
    // Unknown session ids in session/load are creations too, with the method in the message.
    clock.set(5_000 + 2_600);
    expect(
      (await thrown(guarded('session/load', { sessionId: 'new-one' }, undefined))).message,
    ).toBe('ACP session creation rate limit exceeded for session/load; retry after 3s.');
    // The window is anchored at the first creation: at +10 000 ms a fresh 120.
    clock.set(10_000);
    for (let i = 0; i < 120; i++) await guarded('session/new', {}, undefined);
    await expect(guarded('session/new', {}, undefined)).rejects.toThrow(
      'ACP session creation rate limit exceeded for session/new; retry after 10s.',
    );
  });

  it('re-opening a known session is free, even when the window is spent', async () => {
    const clock = manualClock(0);
    const { dispatch, isKnown } = agent();
    const guarded = withSessionCreationLimit(dispatch, { isKnown, clock, limit: 3 });
    for (let i = 0; i < 3; i++) await guarded('session/new', {}, undefined);
    await expect(guarded('session/new', {}, undefined)).rejects.toThrow(/rate limit exceeded/);
    for (let i = 0; i < 500; i++) {
      expect(await guarded('session/load', { sessionId: 's2' }, undefined)).toEqual({
        sessionId: 's2',
      });
    }
    await expect(guarded('session/load', { sessionId: 's99' }, undefined)).rejects.toThrow(
      'ACP session creation rate limit exceeded for session/load; retry after 10s.',
    );
    expect(guarded.limiter.peek()).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('re-opening does not spend budget', async () => {
    const clock = manualClock(0);
    const { dispatch, isKnown } = agent();
    const guarded = withSessionCreationLimit(dispatch, { isKnown, clock, limit: 2 });
    await guarded('session/new', {}, undefined);
    await guarded('session/load', { sessionId: 's1' }, undefined);
    await guarded('session/load', { sessionId: 's1' }, undefined);
    expect(guarded.limiter.peek()).toMatchObject({ allowed: true, remaining: 1 });
    await guarded('session/load', { sessionId: 'elsewhere' }, undefined);
    expect(guarded.limiter.peek()).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('a new limiter instance starts fresh', async () => {
    const clock = manualClock(0);
    const { dispatch, isKnown } = agent();
    const first = withSessionCreationLimit(dispatch, { isKnown, clock });
    for (let i = 0; i < 120; i++) await first('session/new', {}, undefined);
    await expect(first('session/new', {}, undefined)).rejects.toThrow(/retry after 10s\.$/);
    const second = withSessionCreationLimit(dispatch, { isKnown, clock });
    for (let i = 0; i < 120; i++) await second('session/new', {}, undefined);
    await expect(second('session/new', {}, undefined)).rejects.toThrow(/retry after 10s\.$/);
  });

  it('wrappers given the same limiter share its budget', async () => {
    const clock = manualClock(0);
    const limiter = createSessionCreationLimiter({ clock, limit: 2 });
    const a = withSessionCreationLimit(agent().dispatch, { limiter });
    const b = withSessionCreationLimit(agent().dispatch, { limiter });
    await a('session/new', {}, undefined);
    await b('session/new', {}, undefined);
    await expect(a('session/new', {}, undefined)).rejects.toThrow(
      /session\/new; retry after 10s\./,
    );
    expect(a.limiter).toBe(limiter);
  });

  it('other methods pass untouched and free', async () => {
    const clock = manualClock(0);
    const { dispatch } = agent();
    const isKnown = vi.fn(() => false);
    const guarded = withSessionCreationLimit(dispatch, { isKnown, clock, limit: 1 });
    for (let i = 0; i < 50; i++)
      expect(await guarded('session/prompt', {}, undefined)).toEqual({ method: 'session/prompt' });
    expect(isKnown).not.toHaveBeenCalled();
    expect(guarded.limiter.peek()).toMatchObject({ remaining: 1 });
  });

  it('without isKnown every call of a listed method is a creation; methods are configurable', async () => {
    const clock = manualClock(0);
    const { dispatch } = agent();
    expect(sessionOpeningMethods).toEqual(['session/new', 'session/load']);
    const guarded = withSessionCreationLimit(dispatch, {
      clock,
      limit: 1,
      methods: ['newSession'],
    });
    expect(await guarded('session/new', {}, undefined)).toEqual({ sessionId: 's1' });
    await guarded('newSession', {}, undefined);
    await expect(guarded('newSession', {}, undefined)).rejects.toThrow(
      'ACP session creation rate limit exceeded for newSession; retry after 10s.',
    );
  });

  it('an async isKnown: known is free, unknown is charged, a rejection charges nothing', async () => {
    const clock = manualClock(0);
    const known = new Set(['old']);
    const dispatch = vi.fn(async (method: string) => method);
    const guarded = withSessionCreationLimit(dispatch, {
      clock,
      limit: 1,
      isKnown: async (params: { sessionId: string }) => {
        if (params.sessionId === 'broken') throw new Error('db down');
        return known.has(params.sessionId);
      },
    });
    await expect(guarded('session/load', { sessionId: 'broken' }, undefined)).rejects.toThrow(
      'db down',
    );
    await expect(guarded('session/load', { sessionId: 'old' }, undefined)).resolves.toBe(
      'session/load',
    );
    await expect(guarded('session/load', { sessionId: 'fresh' }, undefined)).resolves.toBe(
      'session/load',
    );
    await expect(guarded('session/load', { sessionId: 'fresh2' }, undefined)).rejects.toThrow(
      'ACP session creation rate limit exceeded for session/load; retry after 10s.',
    );
    expect(dispatch).toHaveBeenCalledTimes(2);
  });
});
