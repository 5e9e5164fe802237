// Test harness shared by this package's tests (excluded from the build and the package).
import { once } from 'node:events';
import http, { type IncomingMessage } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { AuthOutcome } from '@portcullis/core';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { WebSocket, WebSocketServer } from 'ws';
import { type GuardUpgradeOptions, guardUpgrade, type UpgradeRefusal } from '../src/index.js';

export const SECRET = 'correct-horse-battery-staple';

/** `?token=` of the request: absent → missing, the secret → ok, anything else → invalid. */
export function tokenOutcome(token: string | null | undefined): AuthOutcome {
  if (token === null || token === undefined || token === '') return 'missing';
  return token === SECRET ? 'ok' : 'invalid';
}

export function queryToken(req: IncomingMessage): string | null {
  return new URL(req.url ?? '/', 'http://localhost').searchParams.get('token');
}

export async function listen(server: http.Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

export async function closeServer(server: http.Server, wss?: WebSocketServer): Promise<void> {
  for (const client of wss?.clients ?? []) client.terminate();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export interface Guarded {
  readonly port: number;
  readonly server: http.Server;
  readonly wss: WebSocketServer;
  readonly clock: ManualClock;
  /** `connection` events the WebSocketServer emitted. */
  readonly connections: IncomingMessage[];
  /** Refusals reported through `onRefused`. */
  readonly refusals: UpgradeRefusal[];
  /** `onAuthenticated` calls. */
  readonly authenticated: WebSocket[];
  readonly detach: () => void;
  close(): Promise<void>;
}

export type GuardOverrides = Partial<GuardUpgradeOptions<WebSocket>> & { path?: string };

/**
 * An HTTP server on 127.0.0.1:0 with a noServer WebSocketServer behind `guardUpgrade`. Its limiter
 * runs on a manual clock unless `limiter` or `options` are given.
 */
export async function startGuarded(overrides: GuardOverrides = {}): Promise<Guarded> {
  const { path, ...rest } = overrides;
  const clock = manualClock(1_000_000);
  const server = http.createServer((_req, res) => {
    res.writeHead(426).end();
  });
  const wss = new WebSocketServer({ noServer: true, ...(path !== undefined && { path }) });
  const connections: IncomingMessage[] = [];
  const refusals: UpgradeRefusal[] = [];
  const authenticated: WebSocket[] = [];
  wss.on('connection', (ws, req) => {
    connections.push(req);
    ws.send('welcome');
  });
  const options: GuardUpgradeOptions<WebSocket> = {
    verify: (req) => tokenOutcome(queryToken(req)),
    ...(rest.limiter === undefined && { clock, timers: clock }),
    onRefused: (_req, refusal) => refusals.push(refusal),
    onAuthenticated: (ws) => authenticated.push(ws),
    ...rest,
  };
  const detach = guardUpgrade(server, wss, options);
  const port = await listen(server);
  return {
    port,
    server,
    wss,
    clock,
    connections,
    refusals,
    authenticated,
    detach,
    close: () => closeServer(server, wss),
  };
}

export interface RawReply {
  readonly status: number;
  readonly statusMessage: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly rawHeaders: readonly string[];
  readonly body: string;
}

/** Sends a raw WebSocket upgrade request (a fresh connection each time) and reads the answer. */
export function rawUpgrade(
  port: number,
  options: { path?: string; headers?: Record<string, string> } = {},
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: options.path ?? '/',
      agent: false,
      headers: {
        Connection: 'Upgrade',
        Upgrade: 'websocket',
        'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'Sec-WebSocket-Version': '13',
        ...options.headers,
      },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({
        status: res.statusCode ?? 0,
        statusMessage: res.statusMessage ?? '',
        headers: res.headers,
        rawHeaders: res.rawHeaders,
        body: '',
      });
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          statusMessage: res.statusMessage ?? '',
          headers: res.headers,
          rawHeaders: res.rawHeaders,
          body,
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** `rawUpgrade` with a token in the query string (omitted when `undefined`). */
export function upgradeWithToken(
  port: number,
  token: string | undefined,
  headers: Record<string, string> = {},
): Promise<RawReply> {
  return rawUpgrade(port, {
    path: token === undefined ? '/' : `/?token=${encodeURIComponent(token)}`,
    headers,
  });
}

/** Sends `count` upgrades one after the other and returns their statuses. */
export async function statuses(count: number, send: () => Promise<RawReply>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push((await send()).status);
  return out;
}

export type ClientResult =
  | { readonly opened: true; readonly ws: WebSocket; readonly firstMessage: string }
  | { readonly opened: false; readonly status: number };

/** Connects a real `ws` client; resolves with its first message once open, or with the refusal status. */
export function connectClient(
  url: string,
  headers: Record<string, string> = {},
): Promise<ClientResult> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('message', (data) => resolve({ opened: true, ws, firstMessage: String(data) }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ opened: false, status: res.statusCode ?? 0 });
      res.resume();
      ws.terminate();
    });
    ws.on('error', reject);
  });
}

/** A promise with its resolve function exposed. */
export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Lets pending promise callbacks and I/O callbacks of this turn run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** The bytes of a minimal, valid WebSocket upgrade request. */
export function upgradeRequestText(path: string, headers: Record<string, string> = {}): string {
  const lines = [
    `GET ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Upgrade: websocket',
    'Connection: Upgrade',
    'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
    'Sec-WebSocket-Version: 13',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** Writes `request` on a fresh TCP connection and returns every byte the server sent until it closed. */
export function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}
