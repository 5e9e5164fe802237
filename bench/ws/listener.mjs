// Portcullis's own work per upgrade, in isolation: the `upgrade` listener of each server variant
// called in a tight loop on a fresh request and socket per call, with `handleUpgrade` a no-op and a
// socket that writes nothing (first-frame variants: the hello's handler, without the socket). The
// difference to the bare listener (to the handler without a limiter) is what Portcullis adds to a
// handshake in CPU time, free of the TCP and scheduling noise of the end-to-end runs. Run alone
// (`node bench/ws/listener.mjs`) or from run.mjs at its end.
//
// Environment: BENCH_WS_LISTENER_N (100 000 calls per sample), BENCH_WS_LISTENER_ROUNDS (7).
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { median } from '../lib/child.mjs';
import { createConnectAuth } from '@portcullis/ws';
import { build, checkToken, hello, LOCKED, REMOTE, SCOPE, TOKEN, WRONG } from './servers.mjs';

/** What a `net.Socket` shows the guard: an emitter with an address, open both ways. */
class FakeSocket extends EventEmitter {
  remoteAddress = '127.0.0.1';
  destroyed = false;
  readable = true;
  writable = true;
  end() {}
  destroy() {
    this.destroyed = true;
  }
}

/** An upgrade request as Node parses the load generator's, with a fresh socket. */
function upgradeRequest(token, xff) {
  const rawHeaders = [
    'Host',
    '127.0.0.1:40000',
    'Connection',
    'Upgrade',
    'Upgrade',
    'websocket',
    'Sec-WebSocket-Version',
    '13',
    'Sec-WebSocket-Key',
    'dGhlIHNhbXBsZSBub25jZQ==',
  ];
  if (xff) rawHeaders.push('X-Forwarded-For', xff);
  const headers = {};
  for (let i = 0; i < rawHeaders.length; i += 2)
    headers[rawHeaders[i].toLowerCase()] = rawHeaders[i + 1];
  return { method: 'GET', url: `/?token=${token}`, headers, rawHeaders, socket: new FakeSocket() };
}

/** A WebSocketServer stand-in: routes everything to itself, completes nothing. */
function fakeWss() {
  let accepted = 0;
  return {
    options: { noServer: true },
    shouldHandle: () => true,
    handleUpgrade(_req, _socket, _head, done) {
      accepted++;
      done({});
    },
    emit: () => true,
    get accepted() {
      return accepted;
    },
  };
}

/** `twin`: the case whose time is subtracted (the same work without Portcullis). */
const CASES = {
  bare: { token: TOKEN, accepted: true, twin: 'bare' },
  guard: { token: TOKEN, accepted: true, twin: 'bare' },
  'guard-proxy': { token: TOKEN, xff: REMOTE, accepted: true, twin: 'bare' },
  'hand-proxy': { token: TOKEN, xff: REMOTE, accepted: true, twin: 'bare' },
  'refused-429': { token: WRONG, xff: LOCKED, accepted: false, twin: 'bare' },
  'refused-401': { token: WRONG, xff: REMOTE, accepted: false, twin: 'bare' },
  frame: { token: TOKEN, accepted: true, twin: 'frame', firstFrame: true },
  connect: { token: TOKEN, accepted: true, twin: 'frame', firstFrame: true },
};

/**
 * The first-frame variants' message handler without the socket: parse the hello, check its
 * token, and (connect) `attempt` it; counts the accepted ones.
 */
function firstFrameHandler(variant) {
  const auth = variant === 'connect' ? createConnectAuth({ scope: SCOPE }) : undefined;
  let accepted = 0;
  return {
    call(req, data) {
      const outcome = checkToken(JSON.parse(data).token);
      const ok = auth === undefined ? outcome === 'ok' : auth.attempt(req, outcome).ok;
      if (ok) accepted++;
    },
    get accepted() {
      return accepted;
    },
  };
}

/**
 * ns per call of each variant's `upgrade` listener (first-frame variants: its message handler),
 * request construction included (the same for every variant: subtract the twin's figure). Median
 * of ROUNDS samples of N calls, variants in alternating order.
 */
const env = process.env;

export async function measureListeners({
  n = Number(env.BENCH_WS_LISTENER_N ?? 100_000),
  rounds = Number(env.BENCH_WS_LISTENER_ROUNDS ?? 7),
} = {}) {
  const listeners = {};
  const head = Buffer.alloc(0);
  for (const [variant, { firstFrame, token }] of Object.entries(CASES)) {
    if (firstFrame) {
      const handler = firstFrameHandler(variant);
      const data = Buffer.from(hello(token));
      listeners[variant] = { call: (req) => handler.call(req, data), wss: handler };
      continue;
    }
    const server = createServer();
    const wss = fakeWss();
    await build(variant, server, wss);
    const [listener] = server.listeners('upgrade');
    listeners[variant] = { call: (req) => listener(req, req.socket, head), wss };
  }
  const samples = Object.fromEntries(Object.keys(CASES).map((v) => [v, []]));
  const names = Object.keys(CASES);
  for (let round = -1; round < rounds; round++) {
    const order = round % 2 ? [...names].reverse() : names;
    for (const variant of order) {
      const { token, xff, accepted } = CASES[variant];
      const { call, wss } = listeners[variant];
      const before = wss.accepted;
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) call(upgradeRequest(token, xff));
      const ns = Number(process.hrtime.bigint() - t0) / n;
      if ((wss.accepted - before === n) !== accepted)
        throw new Error(`${variant}: ${wss.accepted - before} of ${n} accepted`);
      if (round >= 0) samples[variant].push(ns); // round -1 warms up
    }
  }
  return names.map((variant) => {
    const ns = median(samples[variant]);
    const twin = CASES[variant].twin;
    return { variant, twin, nsPerCall: ns, addedNs: ns - median(samples[twin]) };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await measureListeners();
  for (const r of rows)
    console.log(
      `${r.variant.padEnd(12)} ${(r.nsPerCall / 1000).toFixed(2).padStart(6)} µs per call, ${(r.addedNs / 1000).toFixed(2).padStart(6)} µs over ${r.twin}`,
    );
}
