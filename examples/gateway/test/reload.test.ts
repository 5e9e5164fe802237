// Live limits: a changed gateway.json (file watch or SIGHUP → reload()) puts its numbers in force
// without a restart; earned lockouts are kept and the status board shows the new config hash.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, startGateway, testConfig } from './helpers.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

function configFile(patch: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), 'portcullis-reload-')), 'gateway.json');
  writeFileSync(path, JSON.stringify(testConfig(patch)));
  return path;
}

const browser = {
  socket: { remoteAddress: '127.0.0.1' },
  headers: { origin: 'https://a.example' },
};
const remote = { socket: { remoteAddress: '203.0.113.7' }, headers: {} };

describe('config reload', () => {
  it('puts new numbers in force live, keeps lockouts, shows the new hash', async () => {
    const path = configFile({});
    harness = await startGateway({ config: testConfig({}), configPath: path });
    const { gateway } = harness;
    const auth = gateway.connectAuth;
    const hashBefore = gateway.status().gateway.configHash;
    for (let i = 0; i < 3; i++) await auth.attempt(remote, 'invalid');
    for (let i = 0; i < 10; i++) await auth.attempt(browser, 'invalid');
    expect(gateway.reload('test')).toBe(false); // unchanged file: nothing to do

    writeFileSync(
      path,
      JSON.stringify(
        testConfig({ gateway: { auth: { rateLimit: { maxAttempts: 3, lockoutMs: 60_000 } } } }),
      ),
    );
    expect(gateway.reload('SIGHUP')).toBe(true);
    expect(auth.limiter.config).toMatchObject({ maxAttempts: 3, lockoutMs: 60_000 });
    expect(gateway.status().gateway.configHash).not.toBe(hashBefore);
    // Three failures counted under the old max of 10 are over the new max: locked from now on,
    // with the new lockout; the browser lockout earned before the reload is still there.
    const locked = await auth.attempt(remote, 'ok');
    expect(locked).toMatchObject({
      ok: false,
      decision: { reason: 'locked', retryAfterMs: 60_000 },
    });
    expect(await auth.attempt(browser, 'ok')).toMatchObject({ ok: false });
    expect(harness.logger.entries().map((r) => r['event'])).toContain('gateway.config.reloaded');
  });

  it('keeps the config in force when the file became invalid', async () => {
    const path = configFile({});
    harness = await startGateway({ config: testConfig({}), configPath: path });
    writeFileSync(path, '{ "gateway": ');
    expect(harness.gateway.reload('SIGHUP')).toBe(false);
    expect(harness.gateway.connectAuth.limiter.config.maxAttempts).toBe(10);
  });
});
