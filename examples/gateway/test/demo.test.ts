// `npm run demo`, end to end: the in-process gateway, real sockets and real time (the lockout is
// shortened to 5 s so the tour can show one ending). Every step must pass and say what it showed.
import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDemo } from '../src/demo.js';
import { DEFAULT_CONFIG } from '../src/main.js';
import { startGateway, testConfig } from './helpers.js';

describe('npm run demo', () => {
  it('walks through every limit in under 30 s and passes (--json: the exact frames)', {
    timeout: 60_000,
  }, async () => {
    let out = '';
    const result = await runDemo({ json: true, write: (text) => (out += text) });
    const lines = out.trimEnd().split('\n');
    expect(result.steps.map((s) => [s.title, s.outcome])).toEqual([
      ['brute force from a browser page', 'pass'],
      ['lockout logged', 'pass'],
      ['loopback CLI unaffected', 'pass'],
      ['another site unaffected, the same site refused', 'pass'],
      ['credential classes are independent', 'pass'],
      ['webhook 429 with Retry-After', 'pass'],
      ['config.patch × 31', 'pass'],
      ['session-creation burst', 'pass'],
      ['restart requests coalesce, then the cooldown', 'pass'],
      ['status page data', 'pass'],
      ['a botnet through a proxy, a trusted client still in', 'pass'],
      ['a lockout ends', 'pass'],
    ]);
    expect(result.ok).toBe(true);
    expect(result.elapsedMs).toBeLessThan(30_000);
    // A header, one line per step, a summary.
    expect(lines).toHaveLength(14);
    expect(lines[0]).toMatch(/^Portcullis demo — gateway ws:\/\/127\.0\.0\.1:\d+\/ \(in-process/);
    expect(lines[1]).toMatch(
      /^ 1\/12 ✓ brute force from a browser page: .*then \{"type":"res","id":"bf-right","ok":false,"error":\{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts \(retry later\)","retryable":true,"retryAfterMs":\d+,"details":\{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited","recommendedNextStep":"wait_then_retry"\}\}\} \+ close 1008$/,
    );
    expect(lines[2]).toContain(
      '"code":"AUTH_RATE_LIMITED","limiter":"auth-browser","scope":"shared-secret","key":"browser-origin:https://evil-',
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
    // 300 addresses through the proxy hop spend the shared secret's budget; a new address is
    // refused with the exact frame, the one that logged in before gets in.
    expect(lines[11]).toMatch(
      /^11\/12 ✓ a botnet through a proxy, a trusted client still in: gateway behind a proxy on 127\.0\.0\.1 \(trustedProxies \["127\.0\.0\.1"\]\): 203\.0\.113\.50 logs in; 300 addresses × 1 wrong token \(X-Forwarded-For\) → 300 × AUTH_INVALID, the scope budget \(300 \/ 60 min\) spent; the right token from 198\.51\.100\.77 → \{"type":"res","id":"c1","ok":false,"error":\{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts \(retry later\)","retryable":true,"retryAfterMs":35\d{5},"details":\{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited","recommendedNextStep":"wait_then_retry"\}\}\} \+ close 1008; from 203\.0\.113\.50 → hello-ok \{"scope":"shared-secret","exempt":false\}; \/status\.json underAttack \{"layer":"scope","scope":"shared-secret","untilMs":35\d{5}\}$/,
    );
    expect(lines[13]).toMatch(/^demo passed: 12 passed, 0 failed, 0 skipped in \d+\.\d s$/);
    // The in-process gateway stops with the demo: no link to it.
    expect(out).not.toContain('/status ');
    expect(out).not.toMatch(/live at/);
  });

  it('prints one readable line per step, what was sent → what came back', {
    timeout: 60_000,
  }, async () => {
    let out = '';
    const result = await runDemo({ write: (text) => (out += text) });
    expect(result.ok).toBe(true);
    const lines = out.trimEnd().split('\n');
    expect(lines).toHaveLength(15);
    expect(lines[0]).toBe(
      'Portcullis demo against its own in-process gateway (examples/gateway/gateway.json, lockout shortened to 5 s; it stops with the demo)'.replace(
        'examples/gateway/gateway.json',
        relative(process.cwd(), DEFAULT_CONFIG),
      ),
    );
    for (const line of lines.slice(1, 13)) {
      expect(line).toMatch(/^[ \d]\d\/12 ✓ [^:]+: .+ → .+$/);
      expect(line).not.toContain('{"'); // no JSON
      expect(line).not.toContain('\x1b['); // no colour unless asked for
    }
    expect(lines[1]).toMatch(
      /^ 1\/12 ✓ brute force from a browser page: 10 wrong tokens, then the right one, as page https:\/\/evil-\w+\.example → 10 × AUTH_INVALID, then AUTH_RATE_LIMITED: retry in 5\.0 s \(close 1008\)$/,
    );
    expect(lines[6]).toMatch(/→ 202, 20 × 401, 429 Too Many Requests \(Retry-After: 60\), 202$/);
    expect(lines[11]).toBe(
      '11/12 ✓ a botnet through a proxy, a trusted client still in: 300 addresses × 1 wrong token through a proxy on 127.0.0.1 → 300 × AUTH_INVALID: its budget (300 / 60 min) spent, the shared secret is under attack for 60 min; the right token from a new address → AUTH_RATE_LIMITED (close 1008); from one that logged in before → hello-ok',
    );
    expect(lines[13]).toMatch(/^demo passed: 12 passed, 0 failed, 0 skipped in \d+\.\d s$/);
    // No link to the gateway that stopped with the demo; how to get one that stays.
    expect(lines.slice(0, 14).join('\n')).not.toMatch(/http:\/\/127\.0\.0\.1:\d+/);
    expect(lines[14]).toBe(
      'its gateway has stopped; to watch the limits on a page, run npm start, open http://127.0.0.1:18789/status and run npm run demo -- --url http://127.0.0.1:18789',
    );
  });

  it('colours its marks on a terminal; links the status page of a gateway that stays', {
    timeout: 60_000,
  }, async () => {
    const g = await startGateway();
    try {
      let out = '';
      await runDemo({ url: g.url, colour: true, write: (text) => (out += text) });
      expect(out).toContain('\x1b[32m✓\x1b[0m');
      expect(out).toContain('\x1b[1mbrute force from a browser page\x1b[0m');
      expect(out.trimEnd().split('\n').at(-1)).toBe(`watch it live: ${g.url}/status`);
    } finally {
      await g.close();
    }
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
      const result = await runDemo({ url: g.url, json: true, write: (text) => (out += text) });
      expect(result.ok).toBe(false);
      expect(result.steps[0]).toEqual({
        title: 'brute force from a browser page',
        outcome: 'fail',
        line: expect.stringMatching(
          /^ 1\/12 ✗ brute force from a browser page: expected attempt 6: AUTH_INVALID and close 1008, got \{"type":"res","id":"bf6","ok":false,"error":\{"code":"INVALID_REQUEST",.*"AUTH_RATE_LIMITED"/,
        ),
      });
      // Against a running gateway the log step is skipped: its log is in its own output; so is the
      // botnet, whose hour-long soft lock would refuse that gateway's new clients.
      expect(result.steps[1]).toMatchObject({ outcome: 'skip' });
      expect(result.steps[10]).toEqual({
        title: 'a botnet through a proxy, a trusted client still in',
        outcome: 'skip',
        line: `11/12 - a botnet through a proxy, a trusted client still in: skipped (it would put the shared secret of ${g.url} under attack for an hour (new clients refused); it runs with the demo's own gateway)`,
      });
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
