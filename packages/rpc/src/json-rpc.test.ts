import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  authRateLimitedError,
  methodRateLimitedError,
  storeUnavailableError,
} from '@portcullis/core';
import { authFailedError, requestRateLimitedError } from '@portcullis/core/adapter';
import { manualClock } from '@portcullis/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { isPortcullisRpcError, MethodRateLimitedError, PortcullisRpcError } from './errors.js';
import { type JsonRpcId, jsonRpcErrorCodes, toJsonRpcError } from './json-rpc.js';
import { withMethodQuotas } from './method-quotas.js';

const quotaShape = methodRateLimitedError('config.patch', 50_000, { limit: 30, windowMs: 60_000 });

describe('toJsonRpcError', () => {
  it('maps the method-quota shape to -32029 with the shape as data', () => {
    expect(toJsonRpcError(quotaShape, 31)).toEqual({
      jsonrpc: '2.0',
      id: 31,
      error: {
        code: -32029,
        message: 'rate limit exceeded for config.patch; retry after 50s',
        data: {
          code: 'UNAVAILABLE',
          message: 'rate limit exceeded for config.patch; retry after 50s',
          retryable: true,
          retryAfterMs: 50_000,
          details: { method: 'config.patch', limit: '30 per 60s' },
        },
      },
    });
  });

  it('maps the auth lockout shape to -32001, byte for byte', () => {
    expect(JSON.stringify(toJsonRpcError(authRateLimitedError(297_000), 'req-1'))).toBe(
      '{"jsonrpc":"2.0","id":"req-1","error":{"code":-32001,"message":"unauthorized: too many failed authentication attempts (retry later)","data":{"code":"INVALID_REQUEST","message":"unauthorized: too many failed authentication attempts (retry later)","retryable":true,"retryAfterMs":297000,"details":{"code":"AUTH_RATE_LIMITED","authReason":"rate_limited","recommendedNextStep":"wait_then_retry"}}}}',
    );
  });

  it('takes a thrown error and puts its plain shape in data', () => {
    const error = new MethodRateLimitedError(quotaShape, 'k', {
      allowed: false,
      reason: 'limited',
      limit: 30,
      remaining: 0,
      retryAfterMs: 50_000,
      resetMs: 50_000,
      key: 'k',
    });
    const response = toJsonRpcError(error, 0);
    expect(response.error.data).toBe(quotaShape);
    expect(response.error.data).not.toBeInstanceOf(Error);
    expect(response).toEqual(toJsonRpcError(quotaShape, 0));
  });

  it.each([
    ['auth failed (invalid)', authFailedError('invalid'), -32001],
    ['auth failed (missing)', authFailedError('missing'), -32001],
    ['request rate limited', requestRateLimitedError(1_000), -32029],
    ['store unavailable', storeUnavailableError(), -32003],
    [
      'other INVALID_REQUEST',
      { code: 'INVALID_REQUEST', message: 'bad', retryable: false },
      -32602,
    ],
    ['anything else', { code: 'CONFLICT', message: 'x', retryable: false }, -32000],
  ])('%s → %i', (_label, shape, code) => {
    expect(toJsonRpcError(shape, 1).error).toEqual({ code, message: shape.message, data: shape });
  });

  it('every code is a JSON-RPC server error except the standard invalid-request/params codes', () => {
    const { invalidParams, invalidRequest, ...server } = jsonRpcErrorCodes;
    expect(invalidParams).toBe(-32602);
    expect(invalidRequest).toBe(-32600);
    for (const code of Object.values(server)) {
      expect(code).toBeGreaterThanOrEqual(-32099);
      expect(code).toBeLessThanOrEqual(-32000);
    }
  });

  it('an unusable method name maps to the standard -32600 (invalid request)', () => {
    const shape = {
      code: 'INVALID_REQUEST',
      message: 'invalid request: method must be a string, got an array',
      retryable: false,
      details: { code: 'INVALID_METHOD' },
    };
    expect(toJsonRpcError(shape, 3).error).toEqual({
      code: -32600,
      message: shape.message,
      data: shape,
    });
    // INVALID_METHOD only counts on an INVALID_REQUEST shape.
    expect(toJsonRpcError({ ...shape, code: 'CONFLICT' }, 3).error.code).toBe(-32000);
  });

  it('an id that is not a string or a finite number is answered as null', () => {
    for (const id of [{ a: 1 }, ['x'], Number.NaN, Number.POSITIVE_INFINITY, true]) {
      expect(toJsonRpcError(quotaShape, id as never).id).toBeNull();
    }
    expect(toJsonRpcError(quotaShape, 'abc').id).toBe('abc');
    expect(toJsonRpcError(quotaShape, 0).id).toBe(0);
  });

  it('an absent id becomes null; junk input is a TypeError', () => {
    expect(toJsonRpcError(quotaShape).id).toBeNull();
    expect(toJsonRpcError(quotaShape, null).id).toBeNull();
    expect(() => toJsonRpcError({} as never, 1)).toThrow(TypeError);
    expect(() => toJsonRpcError(new Error('plain') as never, 1)).toThrow(TypeError);
    expect(() => toJsonRpcError(null as never, 1)).toThrow(TypeError);
  });

  it('recognises a Portcullis RPC error across copies by its shape', () => {
    const foreign = Object.assign(new Error(quotaShape.message), { shape: quotaShape });
    expect(isPortcullisRpcError(foreign)).toBe(true);
    expect(isPortcullisRpcError(new PortcullisRpcError(storeUnavailableError()))).toBe(true);
    expect(isPortcullisRpcError(new Error('x'))).toBe(false);
    expect(isPortcullisRpcError(quotaShape)).toBe(false);
  });
});

interface Conn {
  deviceId: string | undefined;
  clientIp: string | undefined;
  connId: string;
}

interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: unknown;
}

/** A small JSON-RPC 2.0 app: the quota-wrapped dispatcher plus the request → response step. */
function rpcApp() {
  const clock = manualClock(0);
  const dispatch = (method: string, params: unknown) => ({ applied: method, params });
  const guarded = withMethodQuotas(dispatch, { clock, timers: clock });
  async function handle(request: JsonRpcRequest, conn: Conn): Promise<object> {
    try {
      return {
        jsonrpc: '2.0',
        id: request.id,
        result: await guarded(request.method, request.params, conn),
      };
    } catch (error) {
      if (isPortcullisRpcError(error)) return toJsonRpcError(error, request.id);
      return { jsonrpc: '2.0', id: request.id, error: { code: -32603, message: 'internal error' } };
    }
  }
  return { clock, guarded, handle };
}

const expectedRefusal = (id: number) =>
  `{"jsonrpc":"2.0","id":${id},"error":{"code":-32029,"message":"rate limit exceeded for config.patch; retry after 50s","data":{"code":"UNAVAILABLE","message":"rate limit exceeded for config.patch; retry after 50s","retryable":true,"retryAfterMs":50000,"details":{"method":"config.patch","limit":"30 per 60s"}}}}`;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function listen(server: Server | WebSocketServer): Promise<number> {
  if (server instanceof WebSocketServer) {
    if (server.address() === null) await once(server, 'listening');
  } else {
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  }
  return (server.address() as AddressInfo).port;
}

async function readBody(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body;
}

describe('a real JSON-RPC 2.0 exchange', () => {
  it('over HTTP: 30 config.patch calls answer results, the 31st 10 s later the mapped error', async () => {
    const app = rpcApp();
    const server = createServer(async (req, res) => {
      const request = JSON.parse(await readBody(req)) as JsonRpcRequest;
      const conn: Conn = {
        deviceId: req.headers['x-device-id'] as string | undefined,
        clientIp: req.socket.remoteAddress,
        connId: 'http',
      };
      const response = await app.handle(request, conn);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(response));
    });
    closers.push(async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    });
    const port = await listen(server);
    const call = async (id: number, method: string, device = 'dev-1') => {
      const res = await fetch(`http://127.0.0.1:${port}/rpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-device-id': device },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { raw: '{}' } }),
      });
      expect(res.status).toBe(200);
      return res.text();
    };

    for (let id = 1; id <= 30; id++) {
      expect(JSON.parse(await call(id, 'config.patch'))).toEqual({
        jsonrpc: '2.0',
        id,
        result: { applied: 'config.patch', params: { raw: '{}' } },
      });
    }
    app.clock.advance(10_000);
    expect(await call(31, 'config.patch')).toBe(expectedRefusal(31));
    // Counted per device + IP (the socket's canonical address), and free for reads.
    expect(
      app.guarded.keyOf('config.patch', {
        deviceId: 'dev-1',
        clientIp: '::ffff:127.0.0.1',
        connId: 'x',
      }),
    ).toBe('config.patch|dev-1|127.0.0.1');
    expect(JSON.parse(await call(32, 'config.get'))).toMatchObject({
      id: 32,
      result: { applied: 'config.get' },
    });
    expect(JSON.parse(await call(33, 'config.patch', 'dev-2'))).toMatchObject({
      id: 33,
      result: {},
    });
    await app.guarded.close();
  });

  it('over ws: the 31st config.patch frame is answered with the mapped error', async () => {
    const app = rpcApp();
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    let connections = 0;
    wss.on('connection', (socket, req) => {
      const conn: Conn = {
        deviceId: undefined,
        clientIp: req.socket.remoteAddress,
        connId: `ws-${++connections}`,
      };
      socket.on('message', async (data) => {
        const request = JSON.parse(String(data)) as JsonRpcRequest;
        if (request.method === 'connect')
          conn.deviceId = (request.params as { deviceId: string }).deviceId;
        socket.send(JSON.stringify(await app.handle(request, conn)));
      });
    });
    closers.push(async () => {
      for (const client of wss.clients) client.terminate();
      wss.close();
      await once(wss, 'close');
    });
    const port = await listen(wss);
    const client = new WebSocket(`ws://127.0.0.1:${port}`);
    closers.unshift(async () => {
      client.terminate();
    });
    await once(client, 'open');
    const frames: string[] = [];
    client.on('message', (data) => frames.push(String(data)));
    const send = async (id: number, method: string, params: unknown = {}) => {
      const before = frames.length;
      client.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      while (frames.length === before) await once(client, 'message');
      return frames[before] as string;
    };

    await send(0, 'connect', { deviceId: 'dev-ws' });
    for (let id = 1; id <= 30; id++) {
      expect(JSON.parse(await send(id, 'config.patch'))).toMatchObject({
        id,
        result: { applied: 'config.patch' },
      });
    }
    app.clock.advance(10_000);
    const refusal = await send(31, 'config.patch');
    expect(refusal).toBe(expectedRefusal(31));
    expect(JSON.parse(refusal)).toEqual(toJsonRpcError(quotaShape, 31));
    await app.guarded.close();
  });
});
