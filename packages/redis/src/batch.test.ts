/*
 * RedisStore.batch on a single Redis: a phase of a layered login is one command, whatever the
 * number of layer keys in it, and its answers are those of the calls made one by one.
 */
import type { StoreCall } from '@portcullis/core';
import { callStore, createAuthGate, type GateResult } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deletePrefix,
  ioredis,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { BATCH_SCRIPT_SHA } from './batch-script.js';
import { RedisStore } from './index.js';
import { SCRIPT_SHA } from './script.js';
import { TRUST_SCRIPT_SHA } from './trust-script.js';

interface Login {
  user: string;
  password: string;
}

describe('RedisStore.batch on a single Redis', () => {
  let client: TestClient;
  const prefixes: string[] = [];
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(async () => {
    for (const p of prefixes) {
      await deletePrefix(client.sendCommand, p);
      await deletePrefix(client.sendCommand, `{${p}`);
    }
    await client?.close();
  });

  /** A gate over a RedisStore whose every command is recorded as `<command> <script>`. */
  function setup(layers: boolean) {
    const clock = manualClock(1_700_000_000_000);
    const prefix = uniquePrefix('batch');
    prefixes.push(prefix);
    const sent: string[] = [];
    const name = (sha: unknown) =>
      sha === BATCH_SCRIPT_SHA
        ? 'batch'
        : sha === SCRIPT_SHA
          ? 'script'
          : sha === TRUST_SCRIPT_SHA
            ? 'trust'
            : 'source';
    const store = new RedisStore({
      sendCommand: (args, key) => {
        // The lockout index and its registry are written after a decision, unawaited: not the
        // attempt's commands.
        const index =
          args[0] === 'SADD' ||
          args[0] === 'PEXPIRE' ||
          (args[1] === SCRIPT_SHA && args[4] === 'i');
        if (!index) sent.push(`${args[0]} ${name(args[1])}`);
        return client.sendCommand(args, key);
      },
      prefix,
      clock,
      onError: 'closed',
      localDeny: false,
    });
    const gate = createAuthGate<Login>({
      verify: (r) => (r.password === 'right' ? 'ok' : 'invalid'),
      scope: 'password',
      store,
      clock,
      timers: clock,
      ...(layers && {
        account: (r: Login) => r.user,
        scopeBudget: { maxAttempts: 2, windowMs: 60_000, lockoutMs: 60_000 },
      }),
    });
    const attempt = async (ip: string, user: string, password: string) => {
      sent.length = 0;
      const r = (await gate.run(
        { socket: { remoteAddress: ip }, headers: {} },
        {
          user,
          password,
        },
      )) as GateResult;
      // The lockout index and registry writes go after a decision, unawaited: not the attempt's.
      return {
        status: r.ok ? 200 : r.answer.status,
        sent: sent.filter((c) => c !== 'SADD source'),
      };
    };
    return { attempt, gate, store };
  }

  it('a returning user logs in with two commands, as through the plain gate', async () => {
    const plain = setup(false);
    await plain.attempt('203.0.113.1', 'alice', 'right');
    expect(await plain.attempt('203.0.113.1', 'alice', 'right')).toEqual({
      status: 200,
      sent: ['EVALSHA script', 'EVALSHA script'],
    });
    const layered = setup(true);
    // (The first meets a Redis that may not hold the batch script yet: an EVAL more.)
    expect((await layered.attempt('203.0.113.1', 'alice', 'right')).status).toBe(200);
    expect(await layered.attempt('203.0.113.1', 'alice', 'right')).toEqual({
      status: 200,
      sent: ['EVALSHA batch', 'EVALSHA batch'],
    });
    // A failure is two commands too.
    expect(await layered.attempt('198.51.100.1', 'alice', 'wrong')).toEqual({
      status: 401,
      sent: ['EVALSHA batch', 'EVALSHA batch'],
    });
    // Under attack (the scope's budget spent): the trust read is a third, between them.
    expect((await layered.attempt('198.51.100.2', 'alice', 'wrong')).status).toBe(401);
    expect(await layered.attempt('198.51.100.3', 'alice', 'right')).toEqual({
      status: 429,
      sent: ['EVALSHA batch', 'EVALSHA batch'],
    });
    expect(await layered.attempt('203.0.113.1', 'alice', 'right')).toEqual({
      status: 200,
      sent: ['EVALSHA batch', 'EVALSHA batch', 'EVALSHA batch'],
    });
    for (const s of [plain, layered]) {
      await s.gate.close();
      s.store.close();
    }
  });

  it('a batch that fails answers each call as that call alone fails (its onError answer)', async () => {
    const rule = { maxAttempts: 2, windowMs: 1000, lockoutMs: 5000 };
    const trustRule = { trustMs: 1000, maxTrusted: 3 };
    const calls: StoreCall[] = [
      { op: 'checkFailures', key: 'k', rule },
      { op: 'recordFailure', key: 'k', rule },
      { op: 'recordDistinct', key: 'd', member: 'm', rule },
      { op: 'recordSuccess', key: 's', rule },
      { op: 'trust', table: 't', group: 'g', member: 'c', rule: trustRule },
      { op: 'trusted', table: 't', member: 'c', groups: ['g'], rule: trustRule },
    ];
    for (const onError of ['closed', 'open', 'fallback'] as const) {
      const failing = () =>
        new RedisStore({
          sendCommand: () => Promise.reject(new Error('ECONNREFUSED')),
          prefix: 'never:',
          onError,
          logger: { warn() {}, error() {} },
        });
      const batched = failing();
      const alone = failing();
      const one: unknown[] = [];
      for (const c of calls) one.push(await callStore(alone, c));
      expect([onError, await batched.batch(calls)]).toEqual([onError, one]);
      batched.close();
      alone.close();
    }
  });
});
