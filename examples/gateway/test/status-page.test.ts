// The live status page in headless Chromium: a lockout caused over WebSocket appears on the open
// page without a reload, its time left moves with the (manual) clock, and a screenshot is saved to
// examples/gateway/test-results/status.png.
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../../test/support/chromium.js';
import { connect } from '../src/client.js';
import { type Harness, HOOK_TOKEN, request, startGateway, TOKEN } from './helpers.js';

const RESULTS = fileURLToPath(new URL('../test-results/', import.meta.url));
const EVIL = 'http://evil.localhost:5173';

let browser: Browser | undefined;
let h: Harness | undefined;
const problems: string[] = [];

beforeAll(async () => {
  browser = await launchChromium('The status page test');
  h = await startGateway();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function openStatus(g: Harness): Promise<Page> {
  const page = await (browser as Browser).newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
  });
  await page.goto(`${g.url}/status`);
  await page.locator('#live.live').waitFor();
  return page;
}

describe('/status in Chromium', () => {
  it('shows a lockout live, counts its time down, and lists the refusal', {
    timeout: 60_000,
  }, async () => {
    const g = h as Harness;
    const page = await openStatus(g);
    await expect(page.locator('#name').textContent()).resolves.toBe('“test-gateway”');
    const browserCard = page.locator('section.card[data-limiter="auth-browser"]');
    await expect(browserCard.locator('.none').textContent()).resolves.toBe('none');

    // A page from another local origin brute-forces the WebSocket: locked out on the 10th failure.
    for (let i = 0; i < 10; i++) {
      const r = await connect(g.wsUrl, { origin: EVIL, auth: { token: `guess-${i}` } });
      expect(r.close?.code).toBe(1008);
    }
    const row = browserCard.locator(`tr[data-key="browser-origin:${EVIL}"]`);
    await row.waitFor({ timeout: 10_000 });
    await expect(row.locator('td').allTextContents()).resolves.toEqual([
      'shared-secret',
      `browser-origin:${EVIL}`,
      '5:00',
    ]);
    await expect(browserCard.locator('h3 .count').textContent()).resolves.toBe('1');
    await expect(
      page.locator('#refused tbody tr[data-event="lockout"] td').nth(2).textContent(),
    ).resolves.toBe('auth-browser');

    // Time passes on the gateway's clock: the heartbeat pushes, the page counts down.
    g.clock.advance(3_000);
    await page
      .locator(`tr[data-key="browser-origin:${EVIL}"] td.left`, { hasText: '4:57' })
      .waitFor();

    // The right token during the lockout: refused, and the refusal shows up on the page.
    const refused = await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN } });
    expect(refused.frame.error?.details?.code).toBe('AUTH_RATE_LIMITED');
    await page.locator('#refused tbody tr[data-event="refused"]').first().waitFor();
    await expect(page.locator('#refused-count').textContent()).resolves.toBe('2');
  });

  it('shows blocked control-plane buckets, sessions, restarts and webhook lockouts; screenshot', {
    timeout: 60_000,
  }, async () => {
    const g = h as Harness;
    const page = await openStatus(g);
    const ops = await connect(g.wsUrl, { auth: { token: TOKEN }, device: { id: 'ops-laptop' } });
    for (let i = 0; i < 31; i++)
      await ops.client.request('config.patch', { patch: { gateway: { name: 'test-gateway' } } });
    for (let i = 0; i < 42; i++)
      await ops.client.request('sessions.create', { sessionId: `s${i}` });
    await ops.client.request('gateway.restart.request', { reason: 'config changed', delayMs: 0 });
    g.clock.advance(0);
    await ops.client.request('gateway.restart.request', {
      reason: 'plugin update',
      delayMs: 5_000,
    });
    for (let i = 0; i < 20; i++)
      await request(`${g.url}/hooks/github`, {
        method: 'POST',
        headers: { 'x-portcullis-token': i === 0 ? HOOK_TOKEN : 'stale-token' },
      });
    await request(`${g.url}/hooks/github`, {
      method: 'POST',
      headers: { authorization: 'Bearer x' },
    });
    g.clock.advance(1_000);

    const quota = page.locator('section.card[data-limiter="control-plane"]');
    await quota.locator('tr[data-key="config.patch|ops-laptop|127.0.0.1"]').waitFor();
    await expect(
      quota.locator('tr[data-key="config.patch|ops-laptop|127.0.0.1"] td.left').textContent(),
    ).resolves.toBe('0:59');
    const hooks = page.locator('section.card[data-limiter="webhook"]');
    await hooks.locator('tr[data-key="127.0.0.1"]').waitFor();
    await expect(
      page.locator('section.card[data-limiter="session-creation"] .meter').textContent(),
    ).resolves.toBe('this window 42 / 120');
    const restart = page.locator('section.card[data-limiter="restart"] dd');
    await expect(restart.nth(0).textContent()).resolves.toBe('1');
    await expect(restart.nth(1).textContent()).resolves.toBe('in 0:34 (plugin update)');
    ops.client.close();

    mkdirSync(RESULTS, { recursive: true });
    await page.screenshot({ path: `${RESULTS}status.png`, fullPage: true });
    expect(existsSync(`${RESULTS}status.png`)).toBe(true);
    expect(problems).toEqual([]);
  });
});
