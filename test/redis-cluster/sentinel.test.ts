// Failover under Sentinel: a primary, its replica and three sentinels (quorum 2,
// down-after-milliseconds 1000) on loopback; three worker processes connect through ioredis with
// `sentinels` (onError 'fallback', 'closed', 'open') and send steady traffic while the primary is
// SIGKILLed and the sentinels promote the replica. The assertions are the cluster failover's
// (failover-scenario.ts); the figures are printed as `[failover figures] {…}`.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureBuilt } from '../redis/helpers.js';
import { type Deployment, failoverScenario } from './failover-scenario.js';
import {
  command,
  connectSentinel,
  describeWithRedis,
  info,
  type SentinelGroup,
  startSentinelGroup,
  until,
} from './harness.js';

describeWithRedis('Sentinel failover under traffic', () => {
  let group: SentinelGroup | undefined;

  beforeAll(() => ensureBuilt(), 120_000);
  afterAll(async () => {
    await group?.stop();
  });

  it('the primary is SIGKILLed and the sentinels promote its replica: bounded waits, onError in the gap, Redis after, seen lockouts kept', async () => {
    const g = await startSentinelGroup({ downAfterMs: 1000 });
    group = g;
    try {
      const primary = await g.primary();
      const replica = g.servers.find((p) => p !== primary) as number;
      expect(primary).toBe(g.servers[0]);
      const d: Deployment = {
        label: 'sentinel',
        connect: () => ({ type: 'sentinel', sentinels: g.sentinels, name: g.name }),
        victim: () => true,
        async replicated() {
          const offset = Number((await info(primary, 'replication'))['master_repl_offset']);
          await until(
            async () => Number((await info(replica, 'replication'))['slave_repl_offset']) >= offset,
            5000,
            'the replica in sync',
          );
        },
        async isolateReplica() {
          g.pause(replica);
          expect(await command(primary, ['CLIENT', 'KILL', 'TYPE', 'replica'])).toBe(1);
        },
        async fail() {
          await g.kill(primary);
          g.resume(replica);
        },
        async promoted() {
          await until(
            async () =>
              (await g.primary()) === replica &&
              (await info(replica, 'replication'))['role'] === 'master',
            20_000,
            `the sentinels promoting :${replica}`,
          );
        },
        client: () => connectSentinel(g.sentinels, g.name),
      };
      const figures = await failoverScenario(d, true, [
        { label: 'A', kind: 'ioredis', onError: 'fallback' },
        { label: 'B', kind: 'ioredis', onError: 'closed' },
        { label: 'C', kind: 'ioredis', onError: 'open' },
      ]);
      expect(figures.lost?.extraAllowedPerKey).toEqual([10, 10, 10]);
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${g.logs(10)}`, { cause: error });
    } finally {
      await g.stop();
      group = undefined;
    }
  }, 90_000);
});
