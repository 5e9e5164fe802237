import { describeStoreConformance, manualClock } from '@portcullis/core/testing';
import { afterAll, beforeAll, describe } from 'vitest';
import {
  clientKinds,
  deletePrefix,
  type TestClient,
  uniquePrefix,
} from '../../../test/redis/helpers.js';
import { RedisStore } from './index.js';

// The shared store suite, unchanged, against a real Redis through each supported client. The
// test-only `clock` option sends the suite's manual time to the script instead of Redis `TIME`.
for (const kind of clientKinds) {
  describe(`RedisStore via ${kind.name}`, () => {
    let client: TestClient;
    beforeAll(async () => {
      client = await kind.connect();
    });
    afterAll(() => client?.close());

    describeStoreConformance(`RedisStore (${kind.name})`, () => {
      const clock = manualClock(1_000_000);
      const prefix = uniquePrefix(kind.name);
      const store = new RedisStore({
        sendCommand: client.sendCommand,
        prefix,
        clock,
        onError: 'closed',
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
