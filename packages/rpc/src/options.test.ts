import { MemoryStore, PortcullisConfigError } from '@portcullis/core';
import { describe, expect, it } from 'vitest';
import { withMethodQuotas } from './method-quotas.js';
import { withRestartRequests } from './restart.js';
import { withSessionCreationLimit } from './session-creation.js';

const dispatch = () => 'ok';
const scheduler = { request: () => ({ coalesced: false, delayMs: 0, cooldownMsApplied: 0 }) };

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(PortcullisConfigError);
    return (error as PortcullisConfigError).code;
  }
  throw new Error('expected a PortcullisConfigError');
}

describe('bad options fail at construction with stable codes', () => {
  it.each<[string, unknown, string]>([
    ['limit 0', { limit: 0 }, 'ERR_PORTCULLIS_LIMIT'],
    ['limit NaN', { limit: Number.NaN }, 'ERR_PORTCULLIS_LIMIT'],
    ['limit 1.5', { limit: 1.5 }, 'ERR_PORTCULLIS_LIMIT'],
    ['limit "30"', { limit: '30' }, 'ERR_PORTCULLIS_LIMIT'],
    ['windowMs -1', { windowMs: -1 }, 'ERR_PORTCULLIS_WINDOW_MS'],
    ['windowMs Infinity', { windowMs: Number.POSITIVE_INFINITY }, 'ERR_PORTCULLIS_WINDOW_MS'],
    ['methods []', { methods: [] }, 'ERR_PORTCULLIS_METHODS'],
    ['methods string', { methods: 'config.patch' }, 'ERR_PORTCULLIS_METHODS'],
    ['methods with *', { methods: ['config.*', '*'] }, 'ERR_PORTCULLIS_METHODS'],
    ['methods inner *', { methods: ['a.*.b'] }, 'ERR_PORTCULLIS_METHODS'],
    ['methods with ""', { methods: [''] }, 'ERR_PORTCULLIS_METHODS'],
    ['methods with a number', { methods: [1] }, 'ERR_PORTCULLIS_METHODS'],
    ['identity not a function', { identity: { deviceId: 'x' } }, 'ERR_PORTCULLIS_IDENTITY'],
    ['store without methods', { store: {} }, 'ERR_PORTCULLIS_STORE'],
    [
      'warnings with an unknown code',
      { warnings: { NAME_CLASH: false } },
      'ERR_PORTCULLIS_WARNINGS',
    ],
    [
      'warnings not booleans',
      { warnings: { PORTCULLIS_NAME_CLASH: 0 } },
      'ERR_PORTCULLIS_WARNINGS',
    ],
    [
      'store with maxEntries',
      { store: { consume() {}, peek() {}, refund() {}, delete() {} }, maxEntries: 5 },
      'ERR_PORTCULLIS_MAX_ENTRIES',
    ],
    ['maxEntries 0', { maxEntries: 0 }, 'ERR_PORTCULLIS_MAX_ENTRIES'],
    ['clock without now', { clock: {} }, 'ERR_PORTCULLIS_CLOCK'],
    ['timers without clearTimeout', { timers: { setTimeout() {} } }, 'ERR_PORTCULLIS_TIMERS'],
    ['dryRun "yes"', { dryRun: 'yes' }, 'ERR_PORTCULLIS_DRY_RUN'],
    ['onLimited true', { onLimited: true }, 'ERR_PORTCULLIS_ON_LIMITED'],
    ['name ""', { name: '' }, 'ERR_PORTCULLIS_NAME'],
    ['ipv6Subnet 0', { ipv6Subnet: 0 }, 'ERR_PORTCULLIS_IPV6_SUBNET'],
    ['ipv6Subnet 129', { ipv6Subnet: 129 }, 'ERR_PORTCULLIS_IPV6_SUBNET'],
    ['ipv6Subnet 56.5', { ipv6Subnet: 56.5 }, 'ERR_PORTCULLIS_IPV6_SUBNET'],
    ['ipv6Subnet true', { ipv6Subnet: true }, 'ERR_PORTCULLIS_IPV6_SUBNET'],
    ['ipv6Subnet "64"', { ipv6Subnet: '64' }, 'ERR_PORTCULLIS_IPV6_SUBNET'],
    ['maxPatternMethods 0', { maxPatternMethods: 0 }, 'ERR_PORTCULLIS_MAX_PATTERN_METHODS'],
    [
      'maxPatternMethods NaN',
      { maxPatternMethods: Number.NaN },
      'ERR_PORTCULLIS_MAX_PATTERN_METHODS',
    ],
    ['unknown option', { maxAttempts: 3 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
    ['options not an object', 30, 'ERR_PORTCULLIS_INVALID_OPTIONS'],
  ])('withMethodQuotas: %s', (_label, options, code) => {
    expect(codeOf(() => withMethodQuotas(dispatch, options as never))).toBe(code);
  });

  it('withMethodQuotas names the option and the bad entry in the message', () => {
    expect(() => withMethodQuotas(dispatch, { methods: ['config.patch', 'a*'] })).toThrow(
      'withMethodQuotas: option "methods" must be a non-empty array of method names (a trailing ".*" matches a namespace); entry 1 ("a*") must be an exact name or a name followed by ".*", got an array',
    );
    expect(() => withMethodQuotas(dispatch, { limit: 0 })).toThrow(
      'withMethodQuotas: option "limit" must be an integer ≥ 1, got 0',
    );
    expect(() => withMethodQuotas(dispatch, { ipv6Subnet: 0 })).toThrow(
      'withMethodQuotas: option "ipv6Subnet" must be an integer from 1 to 128 or false, got 0',
    );
  });

  it.each([
    ['withMethodQuotas', () => withMethodQuotas(undefined as never)],
    ['withSessionCreationLimit', () => withSessionCreationLimit('nope' as never)],
    [
      'withRestartRequests',
      () => withRestartRequests(null as never, { scheduler: scheduler as never }),
    ],
  ])('%s: a dispatcher that is not a function', (_name, fn) => {
    expect(codeOf(fn)).toBe('ERR_PORTCULLIS_DISPATCH');
  });

  it.each<[string, unknown, string]>([
    ['limit 0', { limit: 0 }, 'ERR_PORTCULLIS_LIMIT'],
    ['windowMs 0', { windowMs: 0 }, 'ERR_PORTCULLIS_WINDOW_MS'],
    ['isKnown not a function', { isKnown: true }, 'ERR_PORTCULLIS_IS_KNOWN'],
    ['limiter without consume', { limiter: {} }, 'ERR_PORTCULLIS_LIMITER'],
    ['limiter with limit', { limiter: { consume() {} }, limit: 5 }, 'ERR_PORTCULLIS_LIMITER'],
    [
      'limiter with clock',
      { limiter: { consume() {} }, clock: { now: () => 0 } },
      'ERR_PORTCULLIS_LIMITER',
    ],
    ['methods bad', { methods: ['session/*'] }, 'ERR_PORTCULLIS_METHODS'],
    ['unknown option', { cooldownMs: 1 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
  ])('withSessionCreationLimit: %s', (_label, options, code) => {
    expect(codeOf(() => withSessionCreationLimit(dispatch, options as never))).toBe(code);
  });

  it.each<[string, unknown, string]>([
    ['no options', undefined, 'ERR_PORTCULLIS_SCHEDULER'],
    ['no scheduler', {}, 'ERR_PORTCULLIS_SCHEDULER'],
    ['scheduler without request', { scheduler: {} }, 'ERR_PORTCULLIS_SCHEDULER'],
    ['method ""', { scheduler, method: '' }, 'ERR_PORTCULLIS_METHOD'],
    ['maxReasonLength 0', { scheduler, maxReasonLength: 0 }, 'ERR_PORTCULLIS_MAX_REASON_LENGTH'],
    [
      'maxReasonLength 100 000',
      { scheduler, maxReasonLength: 100_000 },
      'ERR_PORTCULLIS_MAX_REASON_LENGTH',
    ],
    ['maxReasons 0', { scheduler, maxReasons: 0 }, 'ERR_PORTCULLIS_MAX_REASONS'],
    ['maxReasons "16"', { scheduler, maxReasons: '16' }, 'ERR_PORTCULLIS_MAX_REASONS'],
    ['unknown option', { scheduler, cooldownMs: 5 }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
  ])('withRestartRequests: %s', (_label, options, code) => {
    expect(codeOf(() => withRestartRequests(dispatch, options as never))).toBe(code);
  });

  it('valid options construct', () => {
    expect(() =>
      withMethodQuotas(dispatch, {
        methods: ['a.*', 'b'],
        limit: 1,
        windowMs: 1,
        dryRun: false,
        ipv6Subnet: false,
        maxPatternMethods: 1,
      }).close(),
    ).not.toThrow();
    expect(() => withSessionCreationLimit(dispatch, { limit: 1, windowMs: 1 })).not.toThrow();
    expect(() => withRestartRequests(dispatch, { scheduler: scheduler as never })).not.toThrow();
    expect(() =>
      withRestartRequests(dispatch, {
        scheduler: scheduler as never,
        maxReasons: 1,
        maxReasonLength: 1,
      }),
    ).not.toThrow();
    expect(() => withMethodQuotas(dispatch, { ipv6Subnet: 128 }).close()).not.toThrow();
  });
});

describe('warnings', () => {
  it('two quota wrappers with one name on one store warn PORTCULLIS_NAME_CLASH, unless switched off', () => {
    const lines: unknown[] = [];
    const logger = { warn: (obj: object) => lines.push(obj), error: () => undefined };
    const store = new MemoryStore();
    withMethodQuotas(dispatch, { store, logger });
    withMethodQuotas(dispatch, { store, logger, limit: 5 });
    expect(lines).toMatchObject([{ code: 'PORTCULLIS_NAME_CLASH', limiter: 'control-plane' }]);
    lines.length = 0;
    withMethodQuotas(dispatch, {
      store,
      logger,
      limit: 6,
      warnings: { PORTCULLIS_NAME_CLASH: false },
    });
    expect(lines).toEqual([]);
    store.close();
  });
});
