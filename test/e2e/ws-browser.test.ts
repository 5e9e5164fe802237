// End to end in a real browser: a page served from a second local origin brute-forces a guarded
// WebSocket server. The page must be locked out (the browser is never loopback-exempt), each site
// must have its own budget, and a Node CLI client on loopback must still get in.
import { once } from 'node:events';
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type GuardUpgradeOptions, guardUpgrade } from '@portcullis/ws';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { launchChromium } from '../support/chromium.js';

const SECRET = 'e2e-secret-token';
const BROWSER_TIMEOUT_MS = 90_000;

/** What the page reports about one WebSocket it opened. */
interface Probe {
  opened: boolean;
  errored: boolean;
  code: number;
  message: string | null;
}

/** The functions the probe page defines on `window`. */
interface ProbeWindow {
  probe(url: string): Promise<Probe>;
  flood(url: string, count: number): Promise<Probe[]>;
}

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>portcullis probe</title>
<script>
  window.probe = (url) => new Promise((resolve) => {
    const seen = { opened: false, errored: false, code: 0, message: null };
    const ws = new WebSocket(url);
    ws.onopen = () => { seen.opened = true; };
    ws.onmessage = (event) => { seen.message = String(event.data); ws.close(1000, 'bye'); };
    ws.onerror = () => { seen.errored = true; };
    ws.onclose = (event) => { seen.code = event.code; resolve(seen); };
  });
  window.flood = async (url, count) => {
    const results = [];
    for (let i = 0; i < count; i++) results.push(await window.probe(url));
    return results;
  };
</script>`;

async function listen(server: http.Server, host = '127.0.0.1'): Promise<number> {
  server.listen(0, host);
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A refusal the guard wrote, as the server saw it. */
interface Refusal {
  readonly status: number;
  readonly origin: string | undefined;
}

let browser: Browser | undefined;
let context: BrowserContext | undefined;
let guarded: http.Server | undefined;
let wss: WebSocketServer | undefined;
const pageServers: http.Server[] = [];
let guardedPort = 0;
const pageOrigins: string[] = [];
const refusals: Refusal[] = [];
const accepted: (string | undefined)[] = [];
/** What Chromium reported for each failed WebSocket of a page (Playwright's `socketerror`). */
const socketErrors = new WeakMap<Page, string[]>();
const pageErrors: string[] = [];

const wsUrl = (token: string) => `ws://127.0.0.1:${guardedPort}/?token=${token}`;
const refusalsFrom = (origin: string | undefined) =>
  refusals.filter((r) => r.origin === origin).map((r) => r.status);

async function openPage(origin: string): Promise<Page> {
  if (!context) throw new Error('browser context not started');
  const page = await context.newPage();
  const errors: string[] = [];
  socketErrors.set(page, errors);
  page.on('websocket', (socket) => socket.on('socketerror', (error) => errors.push(error)));
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${origin}/`);
  return page;
}

function probe(page: Page, url: string): Promise<Probe> {
  return page.evaluate((u) => (globalThis as unknown as ProbeWindow).probe(u), url);
}

function flood(page: Page, url: string, count: number): Promise<Probe[]> {
  return page.evaluate(([u, n]) => (globalThis as unknown as ProbeWindow).flood(u, n), [
    url,
    count,
  ] as const);
}

/** A Node `ws` client: no Origin header, straight from loopback, like a local CLI. */
function cliConnect(token: string): Promise<{ opened: boolean; status: number; message?: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl(token));
    ws.once('message', (data) => {
      resolve({ opened: true, status: 101, message: String(data) });
      ws.close();
    });
    ws.once('unexpected-response', (_req, res) => {
      res.resume();
      resolve({ opened: false, status: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.on('error', reject);
  });
}

beforeAll(async () => {
  guarded = http.createServer((_req, res) => res.writeHead(426).end());
  wss = new WebSocketServer({ noServer: true });
  wss.on('connection', (ws, req) => {
    accepted.push(req.headers.origin);
    ws.send('welcome');
  });
  const options: GuardUpgradeOptions<WebSocket> = {
    scope: 'shared-secret',
    verify: (req: IncomingMessage) => {
      const token = new URL(req.url ?? '/', 'http://localhost').searchParams.get('token');
      if (!token) return 'missing';
      return token === SECRET ? 'ok' : 'invalid';
    },
    onRefused: (req, refusal) =>
      refusals.push({ status: refusal.answer.status, origin: req.headers.origin }),
  };
  guardUpgrade(guarded, wss, options);
  guardedPort = await listen(guarded);

  for (let i = 0; i < 2; i++) {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    pageServers.push(server);
    // Two sites, not just two origins: the ports of one host share one site's budget, so the
    // second page is served from another loopback address (Linux routes all of 127/8 to lo).
    const host = `127.0.0.${i + 1}`;
    pageOrigins.push(`http://${host}:${await listen(server, host)}`);
  }

  browser = await launchChromium('The browser e2e test');
  context = await browser.newContext();
}, BROWSER_TIMEOUT_MS);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  for (const client of wss?.clients ?? []) client.terminate();
  await Promise.all([...pageServers, ...(guarded ? [guarded] : [])].map(close));
}, BROWSER_TIMEOUT_MS);

describe('@portcullis/ws in Chromium', () => {
  it(
    'locks out a page from another local origin: ten 401s, then 429, even for the right token',
    async () => {
      const [originA] = pageOrigins as [string, string];
      const page = await openPage(originA);

      const attempts = await flood(page, wsUrl('wrong'), 11);
      // The browser sees every handshake fail: onerror, then onclose with 1006, never onopen.
      expect(attempts).toEqual(
        Array(11).fill({ opened: false, errored: true, code: 1006, message: null }),
      );
      // The server answered the browser's Origin: ten counted 401s, then the lockout.
      expect(refusalsFrom(originA)).toEqual([...Array(10).fill(401), 429]);

      const rightToken = await probe(page, wsUrl(SECRET));
      expect(rightToken).toEqual({ opened: false, errored: true, code: 1006, message: null });
      expect(refusalsFrom(originA)).toEqual([...Array(10).fill(401), 429, 429]);
      expect(accepted).not.toContain(originA);

      // Chromium's own account of each failed handshake: ten authentication failures (401), then
      // the lockout's status code.
      const seen = socketErrors.get(page) ?? [];
      expect(seen).toHaveLength(12);
      for (const error of seen.slice(0, 10))
        expect(error).toMatch(/HTTP Authentication failed|401/);
      expect(seen.slice(10)).toEqual(
        Array(2).fill(expect.stringContaining('Unexpected response code: 429')),
      );
      expect(pageErrors).toEqual([]);
      await page.close();
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'still lets a Node CLI client without Origin connect from loopback with the right token',
    async () => {
      // The browser's lockout is not the CLI's: it is exempt and never locked out.
      for (let i = 0; i < 12; i++)
        expect(await cliConnect('wrong')).toEqual({ opened: false, status: 401 });
      expect(await cliConnect(SECRET)).toEqual({ opened: true, status: 101, message: 'welcome' });
      expect(refusalsFrom(undefined)).toEqual(Array(12).fill(401));
      expect(accepted).toContain(undefined);
    },
    BROWSER_TIMEOUT_MS,
  );

  it(
    'gives another local site its own budget',
    async () => {
      const [originA, originB] = pageOrigins as [string, string];
      const page = await openPage(originB);
      expect(await probe(page, wsUrl('wrong'))).toEqual({
        opened: false,
        errored: true,
        code: 1006,
        message: null,
      });
      expect(await probe(page, wsUrl(SECRET))).toEqual({
        opened: true,
        errored: false,
        code: 1000,
        message: 'welcome',
      });
      expect(refusalsFrom(originB)).toEqual([401]);
      expect(socketErrors.get(page)).toEqual([
        expect.stringMatching(/HTTP Authentication failed|401/),
      ]);
      expect(accepted).toContain(originB);
      // Origin A is still locked out.
      const pageA = await openPage(originA);
      expect(await probe(pageA, wsUrl(SECRET))).toMatchObject({ opened: false, errored: true });
      expect(refusalsFrom(originA).at(-1)).toBe(429);
      await Promise.all([page.close(), pageA.close()]);
    },
    BROWSER_TIMEOUT_MS,
  );
});
