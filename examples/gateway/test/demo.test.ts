// `npm run demo`, end to end: the in-process gateway, real sockets and real time (the lockout is
// shortened to 5 s so the tour can show one ending). Every step must pass and say what it showed.
import { describe, expect, it } from 'vitest';
import { runDemo } from '../src/demo.js';
import { startGateway, testConfig } from './helpers.js';

describe('npm run demo', () => {
  it('walks through every limit in under 30 s and passes', { timeout: 60_000 }, async () => {
    let out = '';
    const result = await runDemo({ write: (text) => (out += text) });
    const lines = out.trimEnd().split('\n');
    expect(result.steps.map((s) => [s.title, s.outcome])).toEqual([
      ['brute force from a browser page', 'pass'],
      ['lockout logged', 'pass'],
      ['loopback CLI unaffected', 'pass'],
      ['two browser origins, separate buckets', 'pass'],
      ['credential classes are independent', 'pass'],
      ['webhook 429 with Retry-After', 'pass'],
      ['config.patch × 31', 'pass'],
      ['session-creation burst', 'pass'],
      ['restart requests coalesce, then the cooldown', 'pass'],
      ['status page data', 'pass'],
      ['a lockout ends', 'pass'],
    ]);
    expect(result.ok).toBe(true);
    expect(result.elapsedMs).toBeLessThan(30_000);
    // A header, one line per step, a summary.
    expect(lines).toHaveLength(13);
    expect(lines[0]).toMatch(/^Portcullis demo — gateway ws:\/\/127\.0\.0\.1:\d+\/ \(in-process/);
    expect(lines[1]).toMatch(
      /^ 1\/11 ✓ brute force from a browser page: .*then \{"type":"res","id":"bf-right","ok":false,"error":\{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts \(retry later\)","retryable":true,"retryAfterMs":\d+,"details":\{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited","recommendedNextStep":"wait_then_retry"\}\}\} \+ close 1008$/,
    );
    expect(lines[2]).toContain(
      '"code":"AUTH_RATE_LIMITED","limiter":"auth-browser","scope":"shared-secret","key":"browser-origin:http://evil-',
    );
    expect(lines[6]).toContain(
      '20 wrong → 401 each, wrong #21 → 429 Retry-After: 60 "Too Many Requests"',
    );
    expect(lines[7]).toMatch(
      /then \{"code":"UNAVAILABLE","message":"rate limit exceeded for config\.patch; retry after 60s","retryable":true,"retryAfterMs":\d+,"details":\{"method":"config\.patch","limit":"30 per 60s"\}\}/,
    );
    expect(lines[8]).toContain(
      '120 created, then {"code":"UNAVAILABLE","message":"ACP session creation rate limit exceeded for sessions.create; retry after 10s.","retryable":true}',
    );
    expect(lines[9]).toContain(
      '→ {"coalesced":false,"delayMs":250,"cooldownMsApplied":0}, then coalesced:true twice; one gateway.restarted event',
    );
    expect(lines[12]).toMatch(/^demo passed: 11 passed, 0 failed, 0 skipped in \d+\.\d s$/);
  });

  it('reports a step that does not show what it should (exit code 1)', {
    timeout: 60_000,
  }, async () => {
    // A gateway that locks out after 5 failures, toured with the committed config's 10.
    const g = await startGateway({
      config: testConfig({ gateway: { auth: { rateLimit: { maxAttempts: 5 } } } }),
    });
    try {
      let out = '';
      const result = await runDemo({ url: g.url, write: (text) => (out += text) });
      expect(result.ok).toBe(false);
      expect(result.steps[0]).toEqual({
        title: 'brute force from a browser page',
        outcome: 'fail',
        line: expect.stringMatching(
          /^ 1\/11 ✗ brute force from a browser page: expected attempt 6: AUTH_INVALID and close 1008, got \{"type":"res","id":"bf6","ok":false,"error":\{"code":"INVALID_REQUEST",.*"AUTH_RATE_LIMITED"/,
        ),
      });
      // Against a running gateway the log step is skipped: its log is in its own output.
      expect(result.steps[1]).toMatchObject({ outcome: 'skip' });
      expect(out).toMatch(/demo FAILED: \d+ passed, [1-9]\d* failed, \d+ skipped/);
    } finally {
      await g.close();
    }
  });

  it('skips waiting for a lockout longer than 10 s, and fails when no gateway answers', {
    timeout: 60_000,
  }, async () => {
    const long = await runDemo({ write: () => {}, lockoutMs: 60_000 });
    expect(long.steps.at(-1)).toMatchObject({ title: 'a lockout ends', outcome: 'skip' });
    expect(long.ok).toBe(true);
    const down = await runDemo({ write: () => {}, url: 'http://127.0.0.1:9' });
    expect(down.ok).toBe(false);
    expect(down.steps.filter((s) => s.outcome === 'fail').length).toBeGreaterThan(5);
  });
});
