import { metrics } from '@opentelemetry/api';
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
  type MetricData,
} from '@opentelemetry/sdk-metrics';
import {
  channels,
  createConcurrencyLimiter,
  createFailureLimiter,
  createWindowLimiter,
  type Lease,
  PortcullisConfigError,
} from '@portcullis/core';
import { manualClock } from '@portcullis/core/testing';
import { RedisStore } from '@portcullis/redis';
import { afterEach, describe, expect, it } from 'vitest';
import { type Instrumentation, instrument } from './index.js';

/** A reader the test collects from by hand (no timer, no exporter). */
class CollectingReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

interface Sdk {
  provider: MeterProvider;
  /** Every metric collected now, by name. */
  collect(): Promise<Map<string, MetricData>>;
}

const open: { close(): void }[] = [];

function sdk(): Sdk {
  const reader = new CollectingReader();
  const provider = new MeterProvider({ readers: [reader] });
  open.push({ close: () => void provider.shutdown() });
  return {
    provider,
    async collect() {
      const { resourceMetrics, errors } = await reader.collect();
      expect(errors).toEqual([]);
      const out = new Map<string, MetricData>();
      for (const scope of resourceMetrics.scopeMetrics)
        for (const metric of scope.metrics) out.set(metric.descriptor.name, metric);
      return out;
    },
  };
}

function started(options: Parameters<typeof instrument>[0]): Instrumentation {
  const handle = instrument(options);
  open.push(handle);
  return handle;
}

afterEach(() => {
  for (const o of open.splice(0)) o.close();
});

/** The points of a sum or gauge as `value` by sorted attribute text. */
function points(metric: MetricData | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of (metric?.dataPoints ?? []) as DataPoint<number>[]) {
    const label = Object.entries(p.attributes)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(',');
    out[label] = p.value;
  }
  return out;
}

/** The count and sum of each histogram point, by attribute text. */
function histogram(metric: MetricData | undefined): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {};
  for (const p of (metric?.dataPoints ?? []) as DataPoint<Histogram>[]) {
    const label = Object.entries(p.attributes)
      .map(([k, v]) => `${k}=${String(v)}`)
      .sort()
      .join(',');
    out[label] = [p.value.count, Math.round((p.value.sum ?? 0) * 1e6) / 1e6];
  }
  return out;
}

const decisionLabel = (limiter: string, outcome: string, dryRun = false) =>
  `portcullis.dry_run=${dryRun},portcullis.limiter=${limiter},portcullis.outcome=${outcome}`;

describe('instrument()', () => {
  it('publishes nothing per decision before it is called and after close()', () => {
    expect(channels.decision.hasSubscribers).toBe(false);
    expect(channels.storeCall.hasSubscribers).toBe(false);
    const handle = instrument({ meterProvider: sdk().provider });
    expect(channels.decision.hasSubscribers).toBe(true);
    expect(channels.lockout.hasSubscribers).toBe(true);
    expect(channels.storeCall.hasSubscribers).toBe(true);
    handle.close();
    handle.close();
    expect(channels.decision.hasSubscribers).toBe(false);
    expect(channels.lockout.hasSubscribers).toBe(false);
    expect(channels.storeCall.hasSubscribers).toBe(false);
  });

  it('counts every outcome of a window limiter, dry runs apart', async () => {
    const { provider, collect } = sdk();
    started({ meterProvider: provider });
    const api = createWindowLimiter({ name: 'api', limit: 2, windowMs: 60_000 });
    const watch = createWindowLimiter({
      name: 'new-rule',
      limit: 1,
      windowMs: 60_000,
      dryRun: true,
    });
    const answers = [1, 2, 3, 4].map(() => api.consume('203.0.113.7').reason);
    api.consume('198.51.100.1');
    const watched = [1, 2, 3].map(() => watch.consume('203.0.113.7'));
    expect(answers).toEqual(['allowed', 'allowed', 'limited', 'limited']);
    expect(watched.map((d) => [d.allowed, d.reason])).toEqual([
      [true, 'allowed'],
      [true, 'limited'],
      [true, 'limited'],
    ]);
    api.peek('203.0.113.7'); // a peek decides nothing
    expect(points((await collect()).get('portcullis.decisions'))).toEqual({
      [decisionLabel('api', 'allowed')]: 3,
      [decisionLabel('api', 'limited')]: 2,
      [decisionLabel('new-rule', 'allowed', true)]: 1,
      [decisionLabel('new-rule', 'limited', true)]: 2,
    });
  });

  it("counts a failure limiter's checks by outcome and its lockouts per layer", async () => {
    const { provider, collect } = sdk();
    const clock = manualClock(1_000_000);
    started({ meterProvider: provider, clock });
    const auth = createFailureLimiter({ maxAttempts: 3, lockoutMs: 60_000, clock, timers: clock });
    for (let i = 0; i < 3; i++) {
      expect(auth.check('203.0.113.7').reason).toBe('allowed');
      auth.recordFailure('203.0.113.7');
    }
    expect(auth.check('203.0.113.7').reason).toBe('locked');
    expect(auth.check('203.0.113.7', 'device-token').reason).toBe('allowed');
    expect(auth.check('127.0.0.1').reason).toBe('exempt');
    auth.recordSuccess('198.51.100.1'); // only checks are decisions
    const got = await collect();
    expect(points(got.get('portcullis.decisions'))).toEqual({
      [decisionLabel('auth', 'allowed')]: 4,
      [decisionLabel('auth', 'locked')]: 1,
      [decisionLabel('auth', 'exempt')]: 1,
    });
    expect(points(got.get('portcullis.lockouts'))).toEqual({
      'portcullis.layer=client,portcullis.limiter=auth': 1,
    });
  });

  it('exports the series of the limiters it is given at zero, before any decision', async () => {
    const { provider, collect } = sdk();
    const clock = manualClock(0);
    const auth = createFailureLimiter({ name: 'auth', clock, timers: clock });
    const api = createWindowLimiter({ name: 'api', limit: 2, windowMs: 60_000 });
    started({ meterProvider: provider, clock, limiters: [auth, api] });
    const before = await collect();
    expect(points(before.get('portcullis.decisions'))).toEqual({
      [decisionLabel('auth', 'allowed')]: 0,
      [decisionLabel('auth', 'locked')]: 0,
      [decisionLabel('api', 'allowed')]: 0,
      [decisionLabel('api', 'limited')]: 0,
    });
    expect(points(before.get('portcullis.lockouts'))).toEqual({
      'portcullis.layer=client,portcullis.limiter=auth': 0,
    });
    expect(points(before.get('portcullis.lockouts.active'))).toEqual({
      'portcullis.limiter=auth': 0,
    });
    api.consume('203.0.113.7');
    auth.check('203.0.113.7');
    expect(points((await collect()).get('portcullis.decisions'))).toMatchObject({
      [decisionLabel('auth', 'allowed')]: 1,
      [decisionLabel('auth', 'locked')]: 0,
      [decisionLabel('api', 'allowed')]: 1,
    });
  });

  it("counts a concurrency limiter's slots taken and refused, at zero from the start", async () => {
    const { provider, collect } = sdk();
    const slots = createConcurrencyLimiter({ name: 'exports', max: 1 });
    started({ meterProvider: provider, limiters: [slots] });
    expect(points((await collect()).get('portcullis.decisions'))).toEqual({
      [decisionLabel('exports', 'allowed')]: 0,
      [decisionLabel('exports', 'limited')]: 0,
    });
    const held = slots.acquire('203.0.113.7') as Lease;
    (slots.acquire('203.0.113.7') as Lease).release();
    held.release();
    expect(points((await collect()).get('portcullis.decisions'))).toEqual({
      [decisionLabel('exports', 'allowed')]: 1,
      [decisionLabel('exports', 'limited')]: 1,
    });
  });

  it.each([[{}], [[{ name: 'x' }]], ['auth'], [[null]]])(
    'refuses limiters that are not an array of limiters (%j)',
    (limiters) => {
      expect(() => instrument({ limiters: limiters as never })).toThrow(
        expect.objectContaining({ code: 'ERR_PORTCULLIS_LIMITERS', option: 'limiters' }),
      );
      expect(channels.decision.hasSubscribers).toBe(false);
    },
  );

  it('shows the lockouts in force going up and down with the clock', async () => {
    const { provider, collect } = sdk();
    const clock = manualClock(0);
    started({ meterProvider: provider, clock });
    const auth = createFailureLimiter({ maxAttempts: 1, lockoutMs: 60_000, clock, timers: clock });
    const hooks = createFailureLimiter({
      name: 'webhook',
      maxAttempts: 1,
      lockoutMs: 10_000,
      clock,
      timers: clock,
    });
    const gauge = async () => points((await collect()).get('portcullis.lockouts.active'));
    expect(await gauge()).toEqual({});
    auth.recordFailure('203.0.113.1');
    hooks.recordFailure('203.0.113.1');
    expect(await gauge()).toEqual({
      'portcullis.limiter=auth': 1,
      'portcullis.limiter=webhook': 1,
    });
    clock.advance(30_000);
    auth.recordFailure('203.0.113.2'); // ends at 90 000
    expect(await gauge()).toEqual({
      'portcullis.limiter=auth': 2,
      'portcullis.limiter=webhook': 0,
    });
    clock.set(59_999);
    expect(await gauge()).toEqual({
      'portcullis.limiter=auth': 2,
      'portcullis.limiter=webhook': 0,
    });
    clock.set(60_000); // a lockout ends at its end time
    expect(await gauge()).toEqual({
      'portcullis.limiter=auth': 1,
      'portcullis.limiter=webhook': 0,
    });
    clock.set(90_000);
    expect(await gauge()).toEqual({
      'portcullis.limiter=auth': 0,
      'portcullis.limiter=webhook': 0,
    });
    expect(points((await collect()).get('portcullis.lockouts'))).toEqual({
      'portcullis.layer=client,portcullis.limiter=auth': 2,
      'portcullis.layer=client,portcullis.limiter=webhook': 1,
    });
  });

  it('remembers at most maxActiveLockouts per limiter (the first seen starting is forgotten)', async () => {
    const { provider, collect } = sdk();
    const clock = manualClock(0);
    started({ meterProvider: provider, clock, maxActiveLockouts: 2 });
    const auth = createFailureLimiter({ maxAttempts: 1, lockoutMs: 60_000, clock, timers: clock });
    for (const ip of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      auth.recordFailure(ip);
      clock.advance(1_000);
    }
    const gauge = async () => points((await collect()).get('portcullis.lockouts.active'));
    expect(await gauge()).toEqual({ 'portcullis.limiter=auth': 2 });
    clock.set(61_000); // the second lockout's end: only the third is left
    expect(await gauge()).toEqual({ 'portcullis.limiter=auth': 1 });
  });

  it('drops an unlocked lockout from the gauge at once, and counts a lockout started again once', async () => {
    const { provider, collect } = sdk();
    const clock = manualClock(0);
    started({ meterProvider: provider, clock });
    const auth = createFailureLimiter({ maxAttempts: 1, lockoutMs: 60_000, clock, timers: clock });
    auth.recordFailure('203.0.113.1');
    auth.recordFailure('203.0.113.2', 'password');
    auth.ban('203.0.113.3', { ms: 600_000 });
    const gauge = async () => points((await collect()).get('portcullis.lockouts.active'));
    expect(await gauge()).toEqual({ 'portcullis.limiter=auth': 3 });
    auth.reset('203.0.113.1');
    // Another scope's subject of the same key is another lockout.
    auth.reset('203.0.113.2');
    expect(await gauge()).toEqual({ 'portcullis.limiter=auth': 2 });
    auth.reset('203.0.113.2', 'password');
    auth.reset('203.0.113.3');
    expect(await gauge()).toEqual({ 'portcullis.limiter=auth': 0 });
    // Locked again after the unlock: one lockout, with the new end.
    auth.recordFailure('203.0.113.1');
    clock.advance(30_000);
    auth.ban('203.0.113.1', { ms: 60_000 });
    expect(await gauge()).toEqual({ 'portcullis.limiter=auth': 1 });
    clock.advance(59_999);
    expect(await gauge()).toEqual({ 'portcullis.limiter=auth': 1 });
    clock.advance(1);
    expect(await gauge()).toEqual({ 'portcullis.limiter=auth': 0 });
  });

  it('never puts a key, an address or an origin in an attribute', async () => {
    const { provider, collect } = sdk();
    const clock = manualClock(0);
    started({ meterProvider: provider, clock });
    const auth = createFailureLimiter({ maxAttempts: 1, clock, timers: clock });
    auth.recordFailure('2001:db8::1');
    auth.check('2001:db8::1');
    auth.recordFailure('browser-origin:https://evil.example');
    auth.check({ key: 'identity:alice', exempt: false });
    createWindowLimiter({ limit: 1 }).consume('account:alice');
    const texts: string[] = [];
    for (const metric of (await collect()).values())
      for (const p of metric.dataPoints) texts.push(...Object.values(p.attributes).map(String));
    expect(texts.length).toBeGreaterThan(0);
    for (const text of texts) expect(text).not.toMatch(/2001|db8|evil|alice|origin|identity/);
  });

  it('records nothing after close()', async () => {
    const { provider, collect } = sdk();
    const clock = manualClock(0);
    const handle = started({ meterProvider: provider, clock });
    const api = createWindowLimiter({ name: 'api', limit: 5 });
    const auth = createFailureLimiter({ maxAttempts: 1, clock, timers: clock });
    api.consume('a');
    api.consume('a');
    auth.recordFailure('203.0.113.1');
    const before = await collect();
    expect(points(before.get('portcullis.decisions'))).toEqual({
      [decisionLabel('api', 'allowed')]: 2,
    });
    expect(points(before.get('portcullis.lockouts.active'))).toEqual({
      'portcullis.limiter=auth': 1,
    });
    handle.close();
    api.consume('a');
    auth.recordFailure('203.0.113.2');
    clock.advance(300_000);
    // The SDK keeps the last values it collected from an asynchronous instrument.
    const after = await collect();
    expect(points(after.get('portcullis.decisions'))).toEqual({
      [decisionLabel('api', 'allowed')]: 2,
    });
    expect(points(after.get('portcullis.lockouts'))).toEqual({
      'portcullis.layer=client,portcullis.limiter=auth': 1,
    });
  });

  it("uses @opentelemetry/api's global meter provider by default", async () => {
    const { provider, collect } = sdk();
    metrics.setGlobalMeterProvider(provider);
    try {
      started(undefined);
      createWindowLimiter({ name: 'global', limit: 1 }).consume('a');
      expect(points((await collect()).get('portcullis.decisions'))).toEqual({
        [decisionLabel('global', 'allowed')]: 1,
      });
    } finally {
      metrics.disable();
    }
  });

  it.each([
    [{ meterProvider: {} }, 'ERR_PORTCULLIS_METER_PROVIDER'],
    [{ clock: Date.now }, 'ERR_PORTCULLIS_CLOCK'],
    [{ maxActiveLockouts: 0 }, 'ERR_PORTCULLIS_MAX_ACTIVE_LOCKOUTS'],
    [{ maxActiveLockouts: 1.5 }, 'ERR_PORTCULLIS_MAX_ACTIVE_LOCKOUTS'],
    [{ meterprovider: {} }, 'ERR_PORTCULLIS_UNKNOWN_OPTION'],
  ])('refuses %j with %s, subscribing to nothing', (options, code) => {
    let thrown: unknown;
    try {
      instrument(options as never);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(PortcullisConfigError);
    expect((thrown as PortcullisConfigError).code).toBe(code);
    expect(channels.decision.hasSubscribers).toBe(false);
  });
});

describe('instrument() on a RedisStore', () => {
  /** A Redis that answers each script call as told (`'hang'`: never) and PING after 2 ms. */
  function fakeRedis(clock: ReturnType<typeof manualClock>, answers: (unknown[] | 'hang')[]) {
    const sent: string[] = [];
    const sendCommand = (args: string[]) => {
      sent.push(args[0] as string);
      if (args[0] === 'PING')
        return new Promise((resolve) => clock.setTimeout(() => resolve('PONG'), 2));
      const answer = answers.shift() ?? 'hang';
      if (answer === 'hang') return new Promise(() => {});
      return new Promise((resolve) => clock.setTimeout(() => resolve(answer), 3));
    };
    return { sendCommand, sent };
  }

  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('records store latency, timeouts as store errors, and the fallback decisions', async () => {
    const { provider, collect } = sdk();
    const clock = manualClock(1_000_000);
    started({ meterProvider: provider, clock });
    const redis = fakeRedis(clock, [[1, 3, 0, 0, 0], 'hang']);
    const store = new RedisStore({
      sendCommand: redis.sendCommand,
      timeoutMs: 100,
      probeIntervalMs: 1_000,
      clock,
      timers: clock,
    });
    const auth = createFailureLimiter({ maxAttempts: 3, store });

    const first = auth.check('203.0.113.7');
    clock.advance(3);
    expect((await first).reason).toBe('allowed');

    const second = auth.check('203.0.113.7');
    clock.advance(99);
    await settle();
    expect(await Promise.race([second, settle().then(() => 'pending')])).toBe('pending');
    clock.advance(1);
    expect((await second).reason).toBe('fallback');

    clock.advance(1_000);
    // Redis is down: the fallback decides at once and a PING probes in the background.
    expect((await auth.check('203.0.113.7')).reason).toBe('fallback');
    clock.advance(2);
    await settle();
    expect(redis.sent).toEqual(['EVALSHA', 'EVALSHA', 'PING']);

    const got = await collect();
    expect(points(got.get('portcullis.store.errors'))).toEqual({
      'error.type=timeout,portcullis.store=redis': 1,
    });
    expect(histogram(got.get('portcullis.store.duration'))).toEqual({
      'portcullis.store=redis': [2, 0.005],
      'error.type=timeout,portcullis.store=redis': [1, 0.1],
    });
    expect(got.get('portcullis.store.duration')?.descriptor.unit).toBe('s');
    expect(points(got.get('portcullis.decisions'))).toEqual({
      [decisionLabel('auth', 'allowed')]: 1,
      [decisionLabel('auth', 'fallback')]: 2,
    });
    await store.close();
  });

  it('counts a malformed reply as an invalid_reply store error', async () => {
    const { provider, collect } = sdk();
    const clock = manualClock(0);
    started({ meterProvider: provider, clock });
    const redis = fakeRedis(clock, [['not', 'a', 'reply']]);
    const store = new RedisStore({ sendCommand: redis.sendCommand, clock, timers: clock });
    const api = createWindowLimiter({ name: 'api', limit: 5, store });
    const d = api.consume('203.0.113.7');
    clock.advance(3);
    expect((await d).reason).toBe('fallback');
    const got = await collect();
    expect(points(got.get('portcullis.store.errors'))).toEqual({
      'error.type=invalid_reply,portcullis.store=redis': 1,
    });
    expect(histogram(got.get('portcullis.store.duration'))).toEqual({
      'error.type=invalid_reply,portcullis.store=redis': [1, 0.003],
    });
    await store.close();
  });
});
