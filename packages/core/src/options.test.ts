import { describe, expect, it } from 'vitest';
import { PortcullisConfigError } from './errors.js';
import { createFailureLimiter } from './failure-limiter.js';
import { closestName } from './options.js';
import { createWindowLimiter } from './window-limiter.js';

function thrown(fn: () => unknown): PortcullisConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(PortcullisConfigError);
    return error as PortcullisConfigError;
  }
  throw new Error('expected a PortcullisConfigError');
}

describe('unknown option names', () => {
  it('suggest the closest valid name and list every valid one', () => {
    const error = thrown(() => createWindowLimiter({ windowMS: 1000 } as never));
    expect(error.code).toBe('ERR_PORTCULLIS_UNKNOWN_OPTION');
    expect(error.option).toBe('windowMS');
    expect(error.message).toBe(
      'createWindowLimiter: unknown option "windowMS" (did you mean "windowMs"?). Valid options: algorithm, clock, dryRun, limit, logger, maxEntries, name, store, timers, warnings, windowMs',
    );
  });

  it.each([
    ['maxAttempt', 'maxAttempts'],
    ['lockOutMs', 'lockoutMs'],
    ['exemptLoopBack', 'exemptLoopback'],
    ['max', undefined],
    ['trustProxy', undefined],
  ])('%s → %s', (typo, hint) => {
    expect(
      closestName(typo, ['maxAttempts', 'windowMs', 'lockoutMs', 'exemptLoopback', 'maxEntries']),
    ).toBe(hint);
  });

  it('no hint when nothing is close', () => {
    const error = thrown(() => createFailureLimiter({ banana: 1 } as never));
    expect(error.message).toMatch(
      /^createFailureLimiter: unknown option "banana". Valid options: /,
    );
  });
});

describe('a factory mounted instead of its result', () => {
  it.each([
    ['a Node/Express request', { headers: {}, socket: {}, method: 'GET', _events: {} }],
    ['a Fastify request', { headers: {}, raw: {}, id: 'req-1' }],
    ['a Koa context', { headers: {}, req: {}, res: {}, request: {}, app: {} }],
  ])('%s is reported as "call it"', (_name, request) => {
    const error = thrown(() => createWindowLimiter(request as never));
    expect(error.code).toBe('ERR_PORTCULLIS_FACTORY_NOT_CALLED');
    expect(error.message).toContain(
      'createWindowLimiter is a factory: mount its result, createWindowLimiter(options)',
    );
  });
});

describe('a Fetch request mounted instead of options', () => {
  it('a Request, or a Hono context holding one, is reported as "call it"', () => {
    const request = new Request('http://app.test/');
    expect(thrown(() => createWindowLimiter(request as never)).code).toBe(
      'ERR_PORTCULLIS_FACTORY_NOT_CALLED',
    );
    expect(thrown(() => createWindowLimiter({ req: { raw: request } } as never)).code).toBe(
      'ERR_PORTCULLIS_FACTORY_NOT_CALLED',
    );
  });

  it('plain options never read the global Request (on Node it loads all of Fetch)', () => {
    const own = Object.getOwnPropertyDescriptor(globalThis, 'Request');
    const original = globalThis.Request;
    let reads = 0;
    Object.defineProperty(globalThis, 'Request', {
      configurable: true,
      get: () => {
        reads++;
        return original;
      },
    });
    try {
      createWindowLimiter({ limit: 5, name: 'api' });
      createFailureLimiter({ maxAttempts: 3 });
      expect(reads).toBe(0);
    } finally {
      if (own === undefined) Reflect.deleteProperty(globalThis, 'Request');
      else Object.defineProperty(globalThis, 'Request', own);
    }
  });
});

describe('options that only explain a removal', () => {
  it('are neither listed nor suggested; webhook guards refuse exemptLoopback', async () => {
    const { createAuthGate } = await import('./http/auth-gate.js');
    const { createWebhookGate } = await import('./http/webhook-gate.js');
    const error = thrown(() => createAuthGate({ verify: () => 'ok', optoins: 1 } as never));
    expect(error.message).not.toMatch(/[ ,]options[,.]/);
    const nested = thrown(() => createAuthGate({ verify: () => 'ok', options: {} } as never));
    expect(nested.message).toContain('got an object');
    const webhook = thrown(() =>
      createWebhookGate({ verify: () => 'ok', exemptLoopback: true } as never),
    );
    expect(webhook.code).toBe('ERR_PORTCULLIS_UNKNOWN_OPTION');
  });

  it('a Fastify instance passed as options (app.register(rateLimit)) is reported as "call it"', () => {
    const fastifyLike = { register: () => {}, addHook: () => {}, ready: () => {} };
    expect(thrown(() => createWindowLimiter(fastifyLike as never)).code).toBe(
      'ERR_PORTCULLIS_FACTORY_NOT_CALLED',
    );
  });
});
