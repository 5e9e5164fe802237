// Shared by the gateway's tests: a gateway on 127.0.0.1:0 driven by a manual clock, and a raw
// HTTP helper (node:http, so Host and forwarding headers are sent exactly as given).
import http from 'node:http';
import { type ManualClock, manualClock } from '@portcullis/core/testing';
import { mergePatch } from '../src/config.js';
import { createGateway, type Gateway } from '../src/gateway.js';
import { createMemoryLogger } from '../src/logger.js';

export const TOKEN = 'test-token';
export const PASSWORD = 'test-password';
export const HOOK_TOKEN = 'test-hook-token';

/** A valid config; `patch` is merged in (RFC 7396). */
export function testConfig(patch: unknown = {}): unknown {
  return mergePatch(
    {
      gateway: {
        name: 'test-gateway',
        port: 0,
        auth: {
          token: TOKEN,
          password: PASSWORD,
          rateLimit: {
            maxAttempts: 10,
            windowMs: 60_000,
            lockoutMs: 300_000,
            exemptLoopback: true,
          },
        },
        trustedProxies: [],
      },
      hooks: { token: HOOK_TOKEN },
      plugins: { entries: { 'voice-call': { enabled: false } } },
    },
    patch,
  );
}

export interface Harness {
  readonly gateway: Gateway;
  readonly clock: ManualClock;
  readonly logger: ReturnType<typeof createMemoryLogger>;
  readonly url: string;
  readonly wsUrl: string;
  close(): Promise<void>;
}

/** Starts a gateway on a free port with a manual clock (also its timers) and a memory logger. */
export async function startGateway(
  options: { config?: unknown; configPath?: string } = {},
): Promise<Harness> {
  const clock = manualClock(1_000_000);
  const logger = createMemoryLogger({ clock });
  const gateway = createGateway({
    config: options.config ?? testConfig(),
    ...(options.configPath !== undefined && { configPath: options.configPath }),
    clock,
    timers: clock,
    logger,
  });
  const address = await gateway.listen({ port: 0 });
  return {
    gateway,
    clock,
    logger,
    url: address.url,
    wsUrl: address.wsUrl,
    close: () => gateway.close(),
  };
}

export interface RawResponse {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** One HTTP request with exactly these headers; resolves with status, headers and body text. */
export function request(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: options.method ?? 'GET', headers: options.headers ?? {}, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
