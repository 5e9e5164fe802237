import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deletePrefix,
  ioredis,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { BATCH_SCRIPT, batchArgs, type BatchedCall } from './batch-script.js';
import { SCRIPT } from './script.js';
import { TRUST_SCRIPT, trustKeys } from './trust-script.js';

// The batch script against the two scripts it wraps, on a real Redis: every call answers what it
// answers alone, and the calls see one another in order.
describe('the batch script', () => {
  let client: TestClient;
  beforeAll(async () => {
    client = await ioredis.connect();
  });
  afterAll(() => client?.close());

  const run = (calls: readonly BatchedCall[]) => {
    const args = batchArgs(calls);
    args[0] = 'EVAL';
    args[1] = BATCH_SCRIPT;
    return client.sendCommand(args, args[3]);
  };
  const alone = (c: BatchedCall) =>
    client.sendCommand(
      [
        'EVAL',
        c.script === 't' ? TRUST_SCRIPT : SCRIPT,
        String(c.keys.length),
        ...c.keys,
        ...c.args,
      ],
      c.keys[0],
    );

  it('answers each call as its script would alone, in order', async () => {
    const p1 = uniquePrefix('batch-a');
    const p2 = uniquePrefix('batch-b');
    const t = 1_000_000;
    const calls = (p: string): BatchedCall[] => [
      { script: 'm', keys: [`${p}f`], args: ['r', '2', '1000', '5000', String(t)] },
      { script: 'm', keys: [`${p}f`], args: ['k', '2', '1000', '5000', String(t + 1)] },
      { script: 'm', keys: [`${p}f`], args: ['r', '2', '1000', '5000', String(t + 2)] },
      { script: 'm', keys: [`${p}f`], args: ['s', '2', '1000', '5000', String(t + 3)] },
      { script: 'm', keys: [`${p}n`], args: ['s', '2', '1000', '5000', String(t)] },
      { script: 't', keys: trustKeys(p, 'tt'), args: ['q', '1000', String(t), 'c1', 'g'] },
      { script: 't', keys: trustKeys(p, 'tt'), args: ['a', '1000', String(t), '3', 'g', 'c1'] },
      { script: 't', keys: trustKeys(p, 'tt'), args: ['q', '1000', String(t), 'c1', 'g', 'h'] },
    ];
    try {
      const batched = await run(calls(p1));
      const one: unknown[] = [];
      for (const c of calls(p2)) one.push(await alone(c));
      expect(batched).toEqual(one);
      expect(batched).toEqual([
        [1, 1, 0, 1000, 0],
        [1, 1, 0, 999, 0],
        [0, 0, 5000, 5000, 1],
        [0, 0, 4999, 4999, 0],
        [1, 2, 0, 0, 0],
        [0],
        1,
        [1, 0],
      ]);
    } finally {
      await deletePrefix(client.sendCommand, p1);
      await deletePrefix(client.sendCommand, p2);
    }
  });
});
