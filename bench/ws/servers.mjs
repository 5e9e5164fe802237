// The server side of bench/ws: one child process per server, started by run.mjs as
// `node bench/ws/servers.mjs <variant>`. It listens on 127.0.0.1, sends its port over IPC and
// answers 'cpu' with its process.cpuUsage(). See bench/README.md (bench/ws) for what each variant is.
import { createServer } from 'node:http';
import { isIP } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { serveCpu } from '../lib/child.mjs';

/** Credentials and addresses shared with the load generator (run.mjs). */
export const TOKEN = 'portcullis-bench-token-0001';
/** A wrong token of the same length. */
export const WRONG = 'portcullis-bench-token-9999';
export const SCOPE = 'shared-secret';
/** The client behind the trusted proxy: a documentation address, only ever written in a header. */
export const REMOTE = '203.0.113.7';
/** A client locked out at the server's start (variant refused-429). */
export const LOCKED = '203.0.113.66';
/** The load generator's address: the trusted proxy of the proxied variants. */
export const PROXY = '127.0.0.1';
/** The first frame of the first-frame protocol, and the server's answer to a right one. */
export const hello = (token) => JSON.stringify({ type: 'connect', token });
export const OK_FRAME = JSON.stringify({ type: 'connected', ok: true });

const expected = Buffer.from(TOKEN);

/**
 * The application's credential check, the same in every variant that checks: the `token` query
 * parameter compared in constant time. (The digest of the package README's example would add the
 * same cost to every checking variant; a cheaper check makes Portcullis's share of the cost larger.)
 */
export function checkToken(token) {
  if (!token) return 'missing';
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected) ? 'ok' : 'invalid';
}

function tokenOf(url) {
  const at = url.indexOf('token=');
  if (at === -1) return undefined;
  const end = url.indexOf('&', at);
  return decodeURIComponent(url.slice(at + 6, end === -1 ? undefined : end));
}

export const verify = (req) => checkToken(tokenOf(req.url ?? ''));

/**
 * The hand-written minimum of what guardUpgrade does for a proxied client: resolve the client from
 * the right-most X-Forwarded-For hop when the peer is the proxy, check the token, look the client
 * up in a Map of lockouts, forget its failures on success, count them on failure. No browser
 * origins, no IPv6 canonicalisation, no bounds, no scopes, no events: the floor under any limiter.
 */
function handWritten(wss, maxAttempts = 10) {
  const failures = new Map();
  const LOCKOUT_MS = 300_000;
  function clientIp(req) {
    const peer = req.socket.remoteAddress;
    if (peer !== PROXY && peer !== `::ffff:${PROXY}`) return peer;
    const xff = req.headers['x-forwarded-for'];
    if (typeof xff !== 'string') return undefined;
    const hop = xff.slice(xff.lastIndexOf(',') + 1).trim();
    return isIP(hop) ? hop : undefined;
  }
  function refuse(socket, status, text) {
    socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  }
  return function handWrittenUpgrade(req, socket, head) {
    const onError = () => socket.destroy();
    socket.on('error', onError);
    const outcome = verify(req);
    if (outcome === 'missing') return refuse(socket, 401, 'Unauthorized');
    const ip = clientIp(req) ?? 'unknown';
    const now = Date.now();
    const state = failures.get(ip);
    if (state !== undefined && state.lockedUntil > now)
      return refuse(socket, 429, 'Too Many Requests');
    if (outcome === 'invalid') {
      const s = state ?? { count: 0, lockedUntil: 0 };
      if (++s.count >= maxAttempts) s.lockedUntil = now + LOCKOUT_MS;
      failures.set(ip, s);
      return refuse(socket, 401, 'Unauthorized');
    }
    if (state !== undefined) failures.delete(ip);
    socket.off('error', onError);
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  };
}

/** The first-frame protocol: read the hello, check its token, answer ok (or close 1008). */
function firstFrame(wss, attempt, refuse) {
  wss.on('connection', (ws, req) => {
    ws.once('message', (data) => {
      let token;
      try {
        token = JSON.parse(String(data)).token;
      } catch {
        ws.close(1008, 'bad frame');
        return;
      }
      const outcome = checkToken(token);
      if (attempt === undefined) {
        if (outcome === 'ok') ws.send(OK_FRAME);
        else ws.close(1008, 'unauthorized');
        return;
      }
      const result = attempt(req, outcome);
      if (!result.ok) refuse(ws, result);
      else ws.send(OK_FRAME);
    });
  });
}

export async function build(variant, server, wss) {
  const plainUpgrade = () =>
    server.on('upgrade', (req, socket, head) =>
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req)),
    );
  const { guardUpgrade, createConnectAuth } = await import('@portcullis/ws');
  const { createFailureLimiter } = await import('@portcullis/core');
  switch (variant) {
    case 'bare':
      // Exactly what `new WebSocketServer({ server })` does with its own upgrade listener.
      plainUpgrade();
      return;
    case 'guard':
      guardUpgrade(server, wss, { scope: SCOPE, verify });
      return;
    case 'guard-proxy':
      guardUpgrade(server, wss, { scope: SCOPE, verify, trustedProxies: [PROXY] });
      return;
    case 'hand-proxy':
      server.on('upgrade', handWritten(wss));
      return;
    case 'refused-429': {
      // Locked out before the first request, for an hour: every attempt is answered 429.
      const limiter = createFailureLimiter({ lockoutMs: 3_600_000 });
      for (let i = 0; i < 10; i++) limiter.recordFailure(LOCKED, SCOPE);
      if (limiter.check(LOCKED, SCOPE).reason !== 'locked') throw new Error('not locked out');
      guardUpgrade(server, wss, { scope: SCOPE, verify, limiter, trustedProxies: [PROXY] });
      return;
    }
    case 'refused-401':
      // Every wrong token is counted; a limit no run reaches keeps the answers at 401 (the log
      // holds at most one second of failures).
      guardUpgrade(server, wss, {
        scope: SCOPE,
        verify,
        trustedProxies: [PROXY],
        maxAttempts: 1_000_000_000,
        windowMs: 1000,
      });
      return;
    case 'hand-401':
      server.on('upgrade', handWritten(wss, 1_000_000_000));
      return;
    case 'frame':
      plainUpgrade();
      firstFrame(wss);
      return;
    case 'frame-weakmap': {
      // `frame` plus what core's client resolver does per socket: one WeakMap entry keyed by the
      // socket, holding its parsed address (every upgrade is a new socket, so it never hits).
      plainUpgrade();
      const peers = new WeakMap();
      firstFrame(
        wss,
        (req) => {
          if (!peers.has(req.socket))
            peers.set(req.socket, { ip: req.socket.remoteAddress, loopback: true });
          return { ok: true };
        },
        () => {},
      );
      return;
    }
    case 'connect':
    case 'connect-proxy': {
      plainUpgrade();
      const auth = createConnectAuth({
        scope: SCOPE,
        ...(variant === 'connect-proxy' && { trustedProxies: [PROXY] }),
      });
      firstFrame(
        wss,
        (req, outcome) => auth.attempt(req, outcome),
        (ws, refusal) => auth.refuse(ws, refusal),
      );
      return;
    }
    default:
      throw new Error(`unknown variant ${variant}`);
  }
}

async function main(variant) {
  const { WebSocketServer } = await import('ws');
  const server = createServer((_req, res) => res.end());
  const wss = new WebSocketServer({ noServer: true });
  await build(variant, server, wss);
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  serveCpu();
  process.send({ port: server.address().port });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main(process.argv[2]).catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
