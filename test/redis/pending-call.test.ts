// A call waiting on a hung Redis keeps the process alive until onError answers: a script awaiting
// a decision gets it, instead of exiting silently with the promise pending (the per-call timeout
// timer is ref'ed while, and only while, a call is pending).
import { spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import type { OnError } from '@portcullis/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, fixture } from './helpers.js';

/** A TCP server that accepts connections and never answers (a Redis hung mid-command). */
let silent: Server;
const sockets = new Set<Socket>();
let port = 0;

beforeAll(async () => {
  ensureBuilt();
  silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const address = silent.address();
  port = typeof address === 'object' && address ? address.port : 0;
}, 120_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => silent.close(resolve));
});

/** Runs the fixture; resolves with its exit code and stdout (killed after 10 s). */
function run(onError: OnError): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, [fixture('hung-redis.mjs'), String(port), onError], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  return new Promise((resolve) => {
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout });
    });
  });
}

const key = '203.0.113.5';

describe('a script awaiting a decision from a Redis that never answers', () => {
  it.each<[OnError, object]>([
    [
      'closed',
      {
        allowed: false,
        reason: 'store-error',
        limit: 10,
        remaining: 0,
        retryAfterMs: 1000,
        resetMs: 1000,
        key,
      },
    ],
    [
      'open',
      {
        allowed: true,
        reason: 'store-error',
        limit: 10,
        remaining: 10,
        retryAfterMs: 0,
        resetMs: 0,
        key,
      },
    ],
    [
      'fallback',
      {
        allowed: true,
        reason: 'fallback',
        limit: 10,
        remaining: 10,
        retryAfterMs: 0,
        resetMs: 0,
        key,
      },
    ],
  ])("gets the '%s' answer after timeoutMs and exits 0", async (onError, expected) => {
    const { code, stdout } = await run(onError);
    // Without a ref'ed deadline the process exits 0 too, but silently, the decision never made.
    const lines = stdout.split('\n').filter((line) => line !== '');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toEqual(expected);
    expect(code).toBe(0);
  });
});
