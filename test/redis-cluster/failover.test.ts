// Failover on a Redis Cluster under steady traffic from four processes (ioredis `Cluster` and
// node-redis `createCluster`; onError 'fallback', 'closed', 'open', 'fallback'): a primary is
// SIGKILLed and its replica promoted by the cluster (cluster-node-timeout 1000 ms), and, on
// another cluster, a replica takes over in a planned `CLUSTER FAILOVER`. See failover-scenario.ts
// for what is asserted; the figures are printed as `[failover figures] {…}`.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureBuilt } from '../redis/helpers.js';
import { type Deployment, failoverScenario, type WorkerSpec } from './failover-scenario.js';
import {
  type Cluster,
  command,
  connectCluster,
  describeWithRedis,
  info,
  slotOwners,
  startCluster,
  until,
} from './harness.js';

const WORKERS: WorkerSpec[] = [
  { label: 'A', kind: 'ioredis', onError: 'fallback' },
  { label: 'B', kind: 'node-redis', onError: 'closed' },
  { label: 'C', kind: 'ioredis', onError: 'open' },
  { label: 'D', kind: 'node-redis', onError: 'fallback' },
];

/** The second primary of `cluster` and its replica as a failover deployment. */
async function deployment(cluster: Cluster, label: string, crash: boolean): Promise<Deployment> {
  const primary = (await cluster.primaries())[1] as number;
  const replica = await cluster.replicaOf(primary);
  const owner = await slotOwners(cluster);
  return {
    label,
    connect: (kind) => ({ type: 'cluster', kind, seeds: cluster.seeds }),
    victim: (slot) => owner(slot) === primary,
    other: (slot) => owner(slot) !== primary,
    async replicated() {
      const offset = Number((await info(primary, 'replication'))['master_repl_offset']);
      await until(
        async () => Number((await info(replica, 'replication'))['slave_repl_offset']) >= offset,
        5000,
        'the replica in sync',
      );
    },
    async isolateReplica() {
      cluster.pause(replica);
      expect(await command(primary, ['CLIENT', 'KILL', 'TYPE', 'replica'])).toBe(1);
    },
    async fail() {
      if (crash) {
        await cluster.kill(primary);
        cluster.resume(replica);
      } else {
        expect(await command(replica, ['CLUSTER', 'FAILOVER'])).toBe('OK');
      }
    },
    async promoted() {
      await until(
        async () => (await info(replica, 'replication'))['role'] === 'master',
        20_000,
        `the replica :${replica} promoted`,
      );
    },
    settled: () => cluster.waitHealthy(20_000),
    client: () => connectCluster('ioredis', cluster.seeds),
  };
}

describeWithRedis('Redis Cluster failover under traffic', () => {
  let cluster: Cluster | undefined;

  beforeAll(() => ensureBuilt(), 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('a primary is SIGKILLed and its replica promoted: bounded waits, onError in the gap, Redis after, seen lockouts kept', async () => {
    cluster = await startCluster({ nodeTimeoutMs: 1000 });
    try {
      const figures = await failoverScenario(
        await deployment(cluster, 'cluster', true),
        true,
        WORKERS,
      );
      expect(figures.lost?.extraAllowedPerKey).toEqual([10, 10, 10]);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${cluster.logs(8)}`, { cause: error });
    } finally {
      await cluster.stop();
      cluster = undefined;
    }
  }, 90_000);

  it('a planned CLUSTER FAILOVER: bounded waits, nothing lost, counts exact', async () => {
    cluster = await startCluster({ nodeTimeoutMs: 1000 });
    try {
      const figures = await failoverScenario(
        await deployment(cluster, 'cluster', false),
        false,
        WORKERS,
      );
      expect(figures.counters?.length).toBe(6);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${cluster.logs(8)}`, { cause: error });
    } finally {
      await cluster.stop();
      cluster = undefined;
    }
  }, 90_000);
});
