import { createFailureLimiter, presets } from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type AnyRequest, type App, type AppSpec, frameworks } from './harness.js';
import { LaggingStore } from './stores.js';

const wrong = (req: AnyRequest) =>
  req.headers.authorization === undefined ? 'missing' : 'invalid';

/** Sends `n` requests at once and counts the statuses. */
async function flood(
  app: App,
  n: number,
  path: '/auth' | '/webhook',
): Promise<Record<number, number>> {
  const replies = await Promise.all(
    Array.from({ length: n }, () =>
      app.send({
        method: 'POST',
        path,
        headers: {
          'x-forwarded-for': '203.0.113.66',
          authorization: 'Bearer wrong',
          'x-webhook-token': 'wrong',
        },
      }),
    ),
  );
  const counts: Record<number, number> = {};
  for (const r of replies) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

describe.each(frameworks)('concurrency — $name', (fw) => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const variants: [string, () => Partial<NonNullable<AppSpec['auth']>>][] = [
    ['synchronous verify, memory store', () => ({ verify: wrong })],
    [
      'asynchronous verify, memory store',
      () => ({ verify: async (req: AnyRequest) => wrong(req) }),
    ],
    [
      'asynchronous verify, a store that answers later',
      () => {
        const clock = manualClock(0);
        return {
          verify: async (req: AnyRequest) => wrong(req),
          limiter: createFailureLimiter({ store: new LaggingStore(clock) }),
        };
      },
    ],
  ];

  it.each(variants)(
    '200 concurrent wrong credentials from one client: exactly 10 × 401, then 429 (%s)',
    async (_label, make) => {
      const clock = manualClock(0);
      const extra = make();
      app = await fw.build({
        auth: {
          verify: wrong,
          trustedProxies: ['127.0.0.1'],
          ...(extra.limiter === undefined && { clock, timers: clock }),
          ...extra,
        },
      });
      expect(await flood(app, 200, '/auth')).toEqual({ 401: 10, 429: 190 });
    },
  );

  const webhookVariants: [string, () => Partial<NonNullable<AppSpec['webhook']>>][] = [
    ['synchronous verify, memory store', () => ({ verify: wrong })],
    [
      'asynchronous verify, memory store',
      () => ({ verify: async (req: AnyRequest) => wrong(req) }),
    ],
    [
      'asynchronous verify, a store that answers later',
      () => {
        const clock = manualClock(0);
        return {
          verify: async (req: AnyRequest) => wrong(req),
          limiter: createFailureLimiter({
            ...presets.webhookAuth,
            store: new LaggingStore(clock),
          }),
        };
      },
    ],
  ];

  it.each(webhookVariants)(
    '200 concurrent wrong webhook tokens from one sender: exactly 20 × 401 (the 20th starts the lockout), then 429 (%s)',
    async (_label, make) => {
      const clock = manualClock(0);
      const extra = make();
      app = await fw.build({
        webhook: {
          verify: wrong,
          trustedProxies: ['127.0.0.1'],
          ...(extra.limiter === undefined && { clock, timers: clock }),
          ...extra,
        },
      });
      expect(await flood(app, 200, '/webhook')).toEqual({ 401: 20, 429: 180 });
    },
  );
});
