// The `portcullis` binary (packages/cli, built dist/esm/bin.js spawned with node) against a real
// Redis Cluster of 3 primaries (servers.mjs), given one node with --cluster: it lists the
// lockouts of every primary (the store's index is per slot), bans and unlocks subjects whose keys
// live on different primaries, and without --cluster it fails on the first redirection, saying so.
// Lockouts are seeded and checked in this process through ioredis Cluster and a RedisStore.
import { createFailureLimiter, type FailureLimiter } from '@portcullis/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cells, portcullis } from '../../packages/cli/test/cli-process.js';
import { RedisStore } from '../../packages/redis/src/index.js';
import { uniquePrefix } from '../redis/helpers.js';
import {
  type Cluster,
  connectCluster,
  describeWithRedis,
  failureKey,
  pickKeys,
  type StoreClient,
  slotOwners,
  startCluster,
  subject,
} from './harness.js';

describeWithRedis('portcullis (the CLI) on a Redis Cluster (3 primaries)', () => {
  const prefix = uniquePrefix('cli');
  let cluster: Cluster;
  let client: StoreClient;
  let auth: FailureLimiter;
  let store: RedisStore;
  /** One subject per primary, then a fourth anywhere: their keys on four slots. */
  let subjects: string[];
  let node: string;
  const fresh = () => {
    // A store of its own: nothing remembered from this process's earlier decisions.
    const s = new RedisStore({ sendCommand: client.sendCommand, prefix, localDeny: false });
    return { limiter: createFailureLimiter({ store: s }), close: () => s.close() };
  };

  beforeAll(async () => {
    cluster = await startCluster({ replicas: 0 });
    client = await connectCluster('ioredis', cluster.seeds);
    store = new RedisStore({ sendCommand: client.sendCommand, prefix, localDeny: false });
    auth = createFailureLimiter({ store });
    const owner = await slotOwners(cluster);
    const primaries = await cluster.primaries();
    subjects = [
      ...primaries.map(
        (port) =>
          pickKeys(
            1,
            (i) => subject(i),
            (ip) => failureKey(prefix, ip),
            (slot) => owner(slot) === port,
          )[0] as string,
      ),
      subject(200),
    ];
    const seed = cluster.seeds[0] as { host: string; port: number };
    node = `redis://${seed.host}:${seed.port}`;
  }, 60_000);

  afterAll(async () => {
    store?.close();
    await client?.close();
    await cluster?.stop(); // the cluster is this file's own: its keys go with it
  });

  it('lists the lockouts of every primary, soonest end first (exit 0)', async () => {
    const [a, b, c] = subjects as [string, string, string];
    await auth.ban(c, { ms: 3 * 3_600_000 });
    await auth.ban(a, { ms: 3_600_000 });
    await auth.ban(b, { ms: 2 * 3_600_000 });
    const json = await portcullis(
      'lockouts',
      '--cluster',
      '--redis',
      node,
      '--prefix',
      prefix,
      '--json',
    );
    expect([json.code, json.stderr]).toEqual([0, []]);
    expect(
      json.stdout.map((line) => JSON.parse(line)).map((l) => [l.scope, l.key, l.layer]),
    ).toEqual([
      ['default', a, 'ban'],
      ['default', b, 'ban'],
      ['default', c, 'ban'],
    ]);
    const table = await portcullis('lockouts', '--cluster', '--redis', node, '--prefix', prefix);
    expect([table.code, table.stderr]).toEqual([0, []]);
    expect(table.stdout.map((line) => cells(line).slice(0, 3))).toEqual([
      ['SCOPE', 'KEY', 'LAYER'],
      ['default', a, 'ban'],
      ['default', b, 'ban'],
      ['default', c, 'ban'],
    ]);
  });

  it('bans and unlocks on whichever primary holds the key (exit 0)', async () => {
    const [a, , , d] = subjects as [string, string, string, string];
    const where = `(limiter auth, prefix ${prefix}, scope default)`;
    expect(
      await portcullis('ban', d, '--for', '90s', '--cluster', '--redis', node, '--prefix', prefix),
    ).toEqual({ code: 0, stdout: [`banned ${d} for 1m 30s ${where}`], stderr: [] });
    expect(await portcullis('unlock', a, '--cluster', '--redis', node, '--prefix', prefix)).toEqual(
      { code: 0, stdout: [`unlocked ${a} ${where}`], stderr: [] },
    );
    const after = fresh();
    try {
      expect((await after.limiter.check(a)).reason).toBe('allowed');
      const refused = await after.limiter.check(d);
      expect([refused.allowed, refused.reason]).toEqual([false, 'locked']);
      expect(refused.retryAfterMs).toBeLessThanOrEqual(90_000);
      const listed = await after.limiter.lockouts();
      expect(listed.map((l) => [l.key, l.layer])).toEqual([
        [d, 'ban'],
        [subjects[1], 'ban'],
        [subjects[2], 'ban'],
      ]);
    } finally {
      after.close();
    }
  });

  it('without --cluster: exit 1 at the first redirection, saying to add --cluster', async () => {
    const run = await portcullis('lockouts', '--redis', node, '--prefix', prefix);
    expect([run.code, run.stdout, run.stderr.length]).toEqual([1, [], 1]);
    expect(run.stderr[0]).toMatch(
      new RegExp(
        `^error: Redis failed at ${node}: MOVED \\d+ 127\\.0\\.0\\.1:\\d+ \\(this Redis is a Cluster node: add --cluster\\)$`,
      ),
    );
  });
});
