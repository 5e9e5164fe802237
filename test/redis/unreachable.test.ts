// The Redis tests fail, never skip, when Redis is not there: connecting says so and how to fix it.
import { describe, expect, it } from 'vitest';
import { clientKinds, freePort } from './helpers.js';

describe.each(clientKinds)('no Redis listening, via $name', (kind) => {
  it('connect() rejects with instructions instead of letting tests skip', async () => {
    const port = await freePort();
    await expect(kind.connect(port)).rejects.toThrow(
      /Redis is not reachable on 127\.0\.0\.1:\d+.*apt-get install redis-server/s,
    );
  });
});
