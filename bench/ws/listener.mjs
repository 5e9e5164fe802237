// Portcullis's own work per upgrade, in isolation: the `upgrade` listener of each server variant
// called in a tight loop on a fresh request and socket per call, with `handleUpgrade` a no-op and a
// socket that writes nothing. The difference to the bare listener is what the guard adds to a
// handshake in CPU time, free of the TCP and scheduling noise of the end-to-end runs. Run alone
// (`node bench/ws/listener.mjs`) or from run.mjs at its end.
//
// Environment: BENCH_WS_LISTENER_N (100 000 calls per sample), BENCH_WS_LISTENER_ROUNDS (7).
import { EventEmitter } from 'node:events';
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { median } from '../lib/child.mjs';
import { build, LOCKED, REMOTE, TOKEN, WRONG } from './servers.mjs';

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

const CASES = {
  bare: { token: TOKEN, accepted: true },
  guard: { token: TOKEN, accepted: true },
  'guard-proxy': { token: TOKEN, xff: REMOTE, accepted: true },
  'hand-proxy': { token: TOKEN, xff: REMOTE, accepted: true },
  'refused-429': { token: WRONG, xff: LOCKED, accepted: false },
  'refused-401': { token: WRONG, xff: REMOTE, accepted: false },
};

/**
 * ns per call of each variant's `upgrade` listener, request construction included (the same for
 * every variant: subtract bare's figure). Median of ROUNDS samples of N calls, variants in
 * alternating order.
 */
const env = process.env;

export async function measureListeners({
  n = Number(env.BENCH_WS_LISTENER_N ?? 100_000),
  rounds = Number(env.BENCH_WS_LISTENER_ROUNDS ?? 7),
} = {}) {
  const listeners = {};
  for (const variant of Object.keys(CASES)) {
    const server = createServer();
    const wss = fakeWss();
    await build(variant, server, wss);
    const [listener] = server.listeners('upgrade');
    listeners[variant] = { listener, wss };
  }
  const head = Buffer.alloc(0);
  const samples = Object.fromEntries(Object.keys(CASES).map((v) => [v, []]));
  const names = Object.keys(CASES);
  for (let round = -1; round < rounds; round++) {
    const order = round % 2 ? [...names].reverse() : names;
    for (const variant of order) {
      const { token, xff, accepted } = CASES[variant];
      const { listener, wss } = listeners[variant];
      const before = wss.accepted;
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) {
        const req = upgradeRequest(token, xff);
        listener(req, req.socket, head);
      }
      const ns = Number(process.hrtime.bigint() - t0) / n;
      if ((wss.accepted - before === n) !== accepted)
        throw new Error(`${variant}: ${wss.accepted - before} of ${n} accepted`);
      if (round >= 0) samples[variant].push(ns); // round -1 warms up
    }
  }
  const bare = median(samples.bare);
  return names.map((variant) => {
    const ns = median(samples[variant]);
    return { variant, nsPerCall: ns, addedNs: ns - bare };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const rows = await measureListeners();
  for (const r of rows)
    console.log(
      `${r.variant.padEnd(12)} ${(r.nsPerCall / 1000).toFixed(2).padStart(6)} µs per call, ${(r.addedNs / 1000).toFixed(2).padStart(6)} µs over bare`,
    );
}
