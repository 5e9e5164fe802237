// The status page in headless Chromium: it arrives with its data drawn in (no script needed), then
// updates live over Server-Sent Events; times left count down between updates; keys wrap only
// between words; an unlock button lifts a lockout (and another site's page cannot press it); and
// the chart shows the demo's refusals as they happen. The last test saves a
// screenshot to examples/gateway/test-results/status.png.
//
// The gateway of the first tests runs on a manual clock, so the page's own clock is paused too
// (Playwright's page.clock): what the page shows is exactly what the gateway said, until a test
// moves the page's clock on purpose.
import { once } from 'node:events';
import { existsSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { launchChromium } from '../../../test/support/chromium.js';
import { connect } from '../src/client.js';
import { loadConfig } from '../src/config.js';
import { runDemo } from '../src/demo.js';
import { createGateway } from '../src/gateway.js';
import { createMemoryLogger } from '../src/logger.js';
import { DEFAULT_CONFIG } from '../src/main.js';
import { type Harness, HOOK_TOKEN, request, startGateway, TOKEN } from './helpers.js';

const RESULTS = fileURLToPath(new URL('../test-results/', import.meta.url));
const EVIL = 'http://evil.localhost:5173';

let browser: Browser | undefined;
/** Errors the pages of the current test reported. */
const problems: string[] = [];
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  browser = await launchChromium('The status page test');
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

beforeEach(() => {
  problems.length = 0;
});

// Each test's pages close with it, before its gateway stops (a live page would then report the
// lost connection).
async function closePages(): Promise<void> {
  for (const context of contexts.splice(0)) await context.close();
}
afterEach(closePages);

async function newPage(width = 1280, javaScriptEnabled = true): Promise<Page> {
  const context = await (browser as Browser).newContext({
    viewport: { width, height: 900 },
    javaScriptEnabled,
  });
  contexts.push(context);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
  });
  return page;
}

/**
 * Run in the page: the text nodes of key cells drawn on more than one line. `<wbr>` splits a key
 * into text nodes between its separators, so such a node is a word broken in the middle.
 */
const BROKEN_WORDS = `(() => {
  const out = [];
  for (const cell of document.querySelectorAll('td.key'))
    for (const node of cell.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      if (lines.size > 1) out.push(node.textContent);
    }
  return out;
})()`;

/** Opens /status with the page's clock paused (the gateway's clock is manual), once live. */
async function openStatus(g: Harness, width?: number): Promise<Page> {
  const page = await newPage(width);
  await page.clock.install();
  await page.clock.pauseAt(Date.now() + 1_000);
  await page.goto(`${g.url}/status`);
  await page.locator('#live.live').waitFor();
  return page;
}

/** Ten wrong tokens from a page of `origin`: locked out on the 10th. */
async function lockOut(g: Harness, origin = EVIL): Promise<void> {
  for (let i = 0; i < 10; i++) {
    const r = await connect(g.wsUrl, { origin, auth: { token: `guess-${i}` } });
    expect(r.close?.code).toBe(1008);
  }
}

describe('/status without JavaScript', () => {
  it('arrives with its data: without JavaScript it shows the lockout, its time left and the chart', async () => {
    const g = await startGateway();
    try {
      await lockOut(g);
      g.clock.advance(2_000);
      const page = await newPage(1280, false);
      await page.goto(`${g.url}/status`);
      await expect(page.locator('#name').textContent()).resolves.toBe('“test-gateway”');
      await expect(page.locator('#live').textContent()).resolves.toBe('snapshot');
      const row = page.locator(
        `section.card[data-limiter="auth-browser"] tr[data-key="browser-origin:${EVIL}"]`,
      );
      await expect(row.locator('td').allTextContents()).resolves.toEqual([
        'shared-secret',
        `browser-origin:${EVIL}`,
        '4:58',
        'unlock',
      ]);
      const chart = page.locator('.rate-row[data-limiter="auth-browser"]');
      // The page's lockout and its site's (every *.localhost page is the site localhost).
      await expect(chart.getAttribute('data-lockouts')).resolves.toBe('2');
      await expect(chart.locator('rect.allowed').count()).resolves.toBe(1);
      await expect(chart.locator('rect.lockout').count()).resolves.toBe(1);
    } finally {
      await closePages();
      await g.close();
    }
  });
});

describe('/status in Chromium, on a manual clock', () => {
  let h: Harness | undefined;
  beforeAll(async () => {
    h = await startGateway();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('shows a lockout live, counts its time down between updates, and lists the refusal', {
    timeout: 60_000,
  }, async () => {
    const g = h as Harness;
    const page = await openStatus(g);
    await expect(page.locator('#name').textContent()).resolves.toBe('“test-gateway”');
    const browserCard = page.locator('section.card[data-limiter="auth-browser"]');
    await expect(browserCard.locator('.none').textContent()).resolves.toBe('none');

    // A page from another local origin brute-forces the WebSocket: locked out on the 10th failure.
    await lockOut(g);
    const row = browserCard.locator(`tr[data-key="browser-origin:${EVIL}"]`);
    await row.waitFor({ timeout: 10_000 });
    await expect(row.locator('td').allTextContents()).resolves.toEqual([
      'shared-secret',
      `browser-origin:${EVIL}`,
      '5:00',
      'unlock',
    ]);
    // The page's lockout, and its site's: another *.localhost page would be refused too.
    await expect(browserCard.locator('h3 .count').textContent()).resolves.toBe('2');
    await expect(
      browserCard.locator('tr[data-key="browser-site:localhost"] td').allTextContents(),
    ).resolves.toEqual(['shared-secret', 'browser-site:localhost', '5:00', '']);
    await expect(
      page
        .locator('#refused tbody tr[data-event="lockout"]')
        .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-limiter'))),
    ).resolves.toEqual(['auth-browser-site', 'auth-browser']);

    // Between updates the page counts down by itself…
    await page.clock.runFor(2_000);
    await expect(row.locator('td.left').textContent()).resolves.toBe('4:58');
    // …and each update sets it to what the gateway says.
    g.clock.advance(3_000);
    await row.locator('td.left', { hasText: '4:57' }).waitFor();

    // The right token during the lockout: refused, and the refusal shows up on the page with the
    // time left of the wait it was told.
    const refused = await connect(g.wsUrl, { origin: EVIL, auth: { token: TOKEN } });
    expect(refused.frame.error?.details?.code).toBe('AUTH_RATE_LIMITED');
    const refusal = page.locator('#refused tbody tr[data-event="refused"]').first();
    await refusal.waitFor();
    await expect(refusal.locator('td.left').textContent()).resolves.toBe('4:57');
    await expect(page.locator('#refused-count').textContent()).resolves.toBe('3');
    const chart = page.locator('.rate-row[data-limiter="auth-browser"]');
    await expect(chart.getAttribute('data-refused')).resolves.toBe('1');
  });

  it('shows blocked control-plane buckets, sessions, restarts and webhook lockouts', {
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
    await quota
      .locator('tr[data-key="config.patch|ops-laptop|127.0.0.1"] td.left', { hasText: '0:59' })
      .waitFor();
    const hooks = page.locator('section.card[data-limiter="webhook"]');
    await hooks.locator('tr[data-key="127.0.0.1"]').waitFor();
    await expect(
      page.locator('section.card[data-limiter="session-creation"] .meter').textContent(),
    ).resolves.toBe('this window 42 / 120');
    const restart = page.locator('section.card[data-limiter="restart"] dd');
    await expect(restart.nth(0).textContent()).resolves.toBe('1');
    await expect(restart.nth(1).textContent()).resolves.toBe('in 0:34 (plugin update)');
    const rates = page.locator('.rate-row[data-limiter="control-plane"]');
    // 31 config.patch and 2 restart requests: 32 let through, the 31st config.patch refused.
    await expect(rates.getAttribute('data-allowed')).resolves.toBe('32');
    await expect(rates.getAttribute('data-refused')).resolves.toBe('1');
    ops.client.close();
    expect(problems).toEqual([]);
  });

  it('wraps keys only between words, however narrow the window', async () => {
    const g = h as Harness;
    await lockOut(g, 'http://a-rather-long-subdomain-name.of-a-page.localhost:51730');
    const page = await openStatus(g, 640);
    const keys = page.locator('td.key');
    expect(await keys.count()).toBeGreaterThan(3);
    const broken = await page.evaluate<string[]>(BROKEN_WORDS);
    expect(broken).toEqual([]);
    const wrapped = await page.evaluate<number>(
      "[...document.querySelectorAll('td.key')].filter((cell) => cell.getBoundingClientRect().height > 30).length",
    );
    expect(wrapped).toBeGreaterThan(0); // the narrow window did make keys wrap (between words)
  });
});

describe('/status unlock button in Chromium', () => {
  // The client to lock out is a loopback peer sending forwarding headers: keyed 127.0.0.1, not
  // the direct-local CLI, so not exempt; the page itself is the operator's direct-local browser.
  const relayed = { 'x-forwarded-for': '203.0.113.9' };
  const relayedLogsIn = async (g: Harness) => {
    const r = await connect(g.wsUrl, { headers: relayed, auth: { token: TOKEN } });
    r.client.close();
    return r.frame.ok === true;
  };
  async function lockOutRelayed(g: Harness): Promise<void> {
    for (let i = 0; i < 10; i++)
      await connect(g.wsUrl, { headers: relayed, auth: { token: `guess-${i}` } });
    expect(await relayedLogsIn(g)).toBe(false);
  }

  it('click: the row disappears and the client logs in again', { timeout: 60_000 }, async () => {
    const g = await startGateway();
    try {
      await lockOutRelayed(g);
      const page = await openStatus(g);
      const row = page.locator('section.card[data-limiter="auth"] tr[data-key="127.0.0.1"]');
      await expect(row.locator('td').allTextContents()).resolves.toEqual([
        'shared-secret',
        '127.0.0.1',
        '5:00',
        'unlock',
      ]);
      await row.locator('button', { hasText: 'unlock' }).click();
      await row.waitFor({ state: 'detached', timeout: 10_000 });
      // Still live, and the card says so once the next update arrives.
      await page
        .locator('section.card[data-limiter="auth"] .none', { hasText: 'none' })
        .waitFor({ timeout: 10_000 });
      await expect(page.locator('#live').textContent()).resolves.toBe('live');
      expect(await relayedLogsIn(g)).toBe(true);
      expect(problems).toEqual([]);
    } finally {
      await closePages();
      await g.close();
    }
  });

  it('without JavaScript the button posts the form and comes back to /status without the row', {
    timeout: 60_000,
  }, async () => {
    const g = await startGateway();
    try {
      await lockOutRelayed(g);
      const page = await newPage(1280, false);
      await page.goto(`${g.url}/status`);
      const row = 'section.card[data-limiter="auth"] tr[data-key="127.0.0.1"]';
      const [posted, back] = await Promise.all([
        page.waitForResponse(`${g.url}/status/unlock`),
        page.waitForResponse(
          (r) => r.url() === `${g.url}/status` && r.request().method() === 'GET',
        ),
        page.locator(`${row} button`).click(),
      ]);
      expect([posted.status(), await posted.headerValue('location')]).toEqual([303, '/status']);
      expect(back.status()).toBe(200);
      await page.waitForLoadState('load');
      await expect(page.locator(row).count()).resolves.toBe(0);
      expect(await relayedLogsIn(g)).toBe(true);
    } finally {
      await closePages();
      await g.close();
    }
  });

  it('refuses the same form posted from another site’s page, even with the right token', {
    timeout: 60_000,
  }, async () => {
    const g = await startGateway();
    const evil = createServer();
    try {
      await lockOutRelayed(g);
      const status = await request(`${g.url}/status`);
      const token = /data-unlock-token="([\w-]+)"/.exec(status.body)?.[1] ?? 'none';
      const fields = { token, limiter: 'auth', scope: 'shared-secret', key: '127.0.0.1' };
      const inputs = Object.entries(fields)
        .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
        .join('');
      evil.on('request', (_req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/html' });
        res.end(
          `<form method="post" action="${g.url}/status/unlock">${inputs}<button>win a prize</button></form>`,
        );
      });
      evil.listen(0, '127.0.0.1');
      await once(evil, 'listening');
      const port = (evil.address() as AddressInfo).port;
      const page = await newPage(1280, false);
      await page.goto(`http://evil.localhost:${port}/`);
      const [answer] = await Promise.all([
        page.waitForResponse(`${g.url}/status/unlock`),
        page.locator('button').click(),
      ]);
      expect([answer.status(), await answer.text()]).toEqual([
        403,
        'Forbidden: a cross-site request cannot unlock',
      ]);
      expect(await relayedLogsIn(g)).toBe(false);
    } finally {
      await closePages();
      evil.close();
      await g.close();
    }
  });
});

describe('/status in Chromium, during the demo (real time)', () => {
  it('charts the demo’s refusals per limiter as they happen; screenshot', {
    timeout: 60_000,
  }, async () => {
    const gateway = createGateway({
      config: loadConfig(DEFAULT_CONFIG),
      configPath: DEFAULT_CONFIG,
      logger: createMemoryLogger(),
    });
    const { url } = await gateway.listen({ port: 0 });
    try {
      const page = await newPage(1280);
      await page.goto(`${url}/status`);
      await page.locator('#live.live').waitFor();
      const result = await runDemo({ url, write: () => {} });
      expect(result.steps.filter((s) => s.outcome === 'fail')).toEqual([]);

      // Every limiter the demo pushed past its limit shows refusals in the chart.
      const limiters = ['auth-browser', 'webhook', 'control-plane', 'session-creation'];
      for (const limiter of limiters) {
        const row = page.locator(`.rate-row[data-limiter="${limiter}"]`);
        await row.locator('rect.refused').first().waitFor({ state: 'attached' });
        expect(Number(await row.getAttribute('data-refused'))).toBeGreaterThan(0);
      }
      const auth = page.locator('.rate-row[data-limiter="auth-browser"]');
      expect(Number(await auth.getAttribute('data-lockouts'))).toBe(2); // the page's, its site's
      await expect(
        page.locator('.rate-row[data-limiter="session-creation"]').getAttribute('data-allowed'),
      ).resolves.toBe('120');

      mkdirSync(RESULTS, { recursive: true });
      await page.screenshot({ path: `${RESULTS}status.png`, fullPage: true });
      expect(existsSync(`${RESULTS}status.png`)).toBe(true);
      expect(problems).toEqual([]);
    } finally {
      await closePages();
      await gateway.close();
    }
  });
});
