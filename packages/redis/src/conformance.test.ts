import { describeStoreConformance, manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe } from 'vitest';
import {
  clientKinds,
  deletePrefix,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { RedisStore } from './index.js';

// The shared store suite, unchanged, against a real Redis through each supported client, with the
// local deny table on (the default) and off. The test-only `clock` option sends the suite's manual
// time to the script instead of Redis `TIME`.
for (const [kind, localDeny] of clientKinds.flatMap(
  (k) =>
    [
      [k, true],
      [k, false],
    ] as const,
)) {
  describe(`RedisStore via ${kind.name}, localDeny ${localDeny ? 'on' : 'off'}`, () => {
    let client: TestClient;
    beforeAll(async () => {
      client = await kind.connect();
    });
    afterAll(() => client?.close());

    describeStoreConformance(`RedisStore (${kind.name}, localDeny ${localDeny})`, () => {
      const clock = manualClock(1_000_000);
      const prefix = uniquePrefix(kind.name);
      const store = new RedisStore({
        sendCommand: client.sendCommand,
        prefix,
        clock,
        onError: 'closed',
        localDeny,
      });
      return {
        store,
        advance: (ms) => clock.advance(ms),
        rewind: (ms) => clock.set(clock.now() - ms),
        teardown: async () => {
          store.close();
          await deletePrefix(client.sendCommand, prefix);
        },
      };
    });
  });
}
