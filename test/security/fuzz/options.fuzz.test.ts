/*
 * Random option values at every factory: each either builds or throws PortcullisConfigError with a
 * stable code. A TypeError, a RangeError or a silently accepted NaN would mean a hole in validation.
 */
import {
  createFailureLimiter,
  createRestartScheduler,
  createSessionCreationLimiter,
  createWindowLimiter,
  MemoryStore,
  PortcullisConfigError,
  resolveClient,
} from '@portcullis/core';
import * as express from '@portcullis/express';
import * as fastify from '@portcullis/fastify';
import * as koa from '@portcullis/koa';
import { RedisStore } from '@portcullis/redis';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const RUNS = 300;

/** Values a careless or hostile config file holds. */
const junk = fc.oneof(
  fc.anything(),
  fc.constantFrom(
    0,
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    2 ** 31,
    2 ** 32,
    2 ** 53,
    '10',
    '',
    true,
    null,
    [],
    {},
    ['0.0.0.0/0'],
    ['::/0'],
    ['not-an-ip'],
    () => 'ok',
  ),
);

/** Builds with one option set to a random value next to otherwise valid ones; closes what it made. */
function tryBuild(build: () => unknown): void {
  let made: unknown;
  try {
    made = build();
  } catch (error) {
    expect(error).toBeInstanceOf(PortcullisConfigError);
    expect((error as PortcullisConfigError).code).toMatch(/^ERR_PORTCULLIS_[A-Z0-9_]+$/);
    return;
  }
  const closer = made as { close?: () => unknown } | undefined;
  if (typeof closer?.close === 'function') closer.close();
}

const verify = () => 'ok' as const;
const sendCommand = async () => null;

const factories: Record<
  string,
  { names: string[]; build: (o: Record<string, unknown>) => unknown }
> = {
  createFailureLimiter: {
    names: [
      'maxAttempts',
      'windowMs',
      'lockoutMs',
      'exemptLoopback',
      'ipv6Subnet',
      'maxEntries',
      'name',
      'dryRun',
      'logger',
      'clock',
      'store',
    ],
    build: (o) => createFailureLimiter(o),
  },
  createWindowLimiter: {
    names: ['limit', 'windowMs', 'algorithm', 'maxEntries', 'name', 'dryRun', 'store', 'clock'],
    build: (o) => createWindowLimiter(o),
  },
  createSessionCreationLimiter: {
    names: ['limit', 'windowMs', 'dryRun', 'clock'],
    build: (o) => createSessionCreationLimiter(o),
  },
  createRestartScheduler: {
    names: ['cooldownMs', 'defaultDelayMs', 'maxDelayMs', 'timers', 'onRestart'],
    build: (o) => createRestartScheduler({ onRestart: () => {}, ...o }),
  },
  MemoryStore: {
    names: ['maxEntries', 'sweepIntervalMs', 'clock', 'timers'],
    build: (o) => new MemoryStore(o),
  },
  RedisStore: {
    names: ['prefix', 'onError', 'timeoutMs', 'sendCommand'],
    build: (o) => new RedisStore({ sendCommand, ...o } as never),
  },
  resolveClient: {
    names: ['trustedProxies', 'allowRealIpFallback'],
    build: (o) => resolveClient({ socket: { remoteAddress: '10.0.0.1' }, headers: {} }, o),
  },
  'express.rateLimit': {
    names: ['limit', 'windowMs', 'algorithm', 'headers', 'cost', 'key', 'trustedProxies', 'name'],
    build: (o) => express.rateLimit(o),
  },
  'express.authGuard': {
    names: ['scope', 'trustedProxies', 'options', 'limiter', 'browserBudget', 'verify'],
    build: (o) => express.authGuard({ verify, ...o } as never),
  },
  'koa.webhookGuard': {
    names: ['trustedProxies', 'options', 'limiter', 'verify'],
    build: (o) => koa.webhookGuard({ verify, ...o } as never),
  },
  'fastify.rateLimit': {
    names: ['limit', 'windowMs', 'ipv6Subnet', 'skip', 'dryRun'],
    build: (o) => fastify.rateLimit(o),
  },
};

describe('fuzz: option values', () => {
  it.each(Object.keys(factories))('%s builds or throws PortcullisConfigError', (name) => {
    const { names, build } = factories[name] as (typeof factories)[string];
    fc.assert(
      fc.property(
        fc.constantFrom(...names, 'windowMS', '__proto__', 'constructor'),
        junk,
        (option, value) => {
          const options = Object.create(null) as Record<string, unknown>;
          Object.defineProperty(options, option, { value, enumerable: true });
          tryBuild(() => build(options));
        },
      ),
      { numRuns: RUNS },
    );
  });
});
