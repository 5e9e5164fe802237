// A lighter load generator for bench/ws (BENCH_WS_CLIENT=raw): the same handshakes as the `ws`
// client, written and read by hand on a plain TCP socket. The request is built once per run (a
// fixed Sec-WebSocket-Key: the server hashes it all the same), the 101 is recognised by its status
// line, the one frame each way is framed by hand, and the close is a masked close frame answered by
// the server's close frame and FIN. It costs the client a fraction of what `ws` does, so that the
// server, not the load generator, sets the pace.
import { connect } from 'node:net';
import { randomBytes } from 'node:crypto';

const KEY = randomBytes(16).toString('base64');

/** A masked client frame (`opcode`: 0x1 text, 0x8 close) with a payload under 126 bytes. */
function clientFrame(opcode, payload) {
  const mask = randomBytes(4);
  const out = Buffer.alloc(6 + payload.length);
  out[0] = 0x80 | opcode;
  out[1] = 0x80 | payload.length;
  mask.copy(out, 2);
  for (let i = 0; i < payload.length; i++) out[6 + i] = payload[i] ^ mask[i & 3];
  return out;
}

const CLOSE_1000 = Buffer.from([0x03, 0xe8]);

/**
 * Compiles a variant's handshake for a server: returns `() => Promise<void>` that resolves when one
 * handshake is over as `spec` expects (status, then for a 101 the optional hello/ok exchange and
 * the closing handshake) and rejects on anything else.
 */
export function rawHandshake(port, spec, { hello, okFrame }) {
  const request = Buffer.from(
    `GET /?token=${spec.token} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\n` +
      `Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${KEY}\r\n` +
      (spec.xff ? `X-Forwarded-For: ${spec.xff}\r\n` : '') +
      '\r\n',
  );
  const statusLine = `HTTP/1.1 ${spec.expect} `;
  const helloFrame = spec.frame ? clientFrame(0x1, Buffer.from(hello(spec.token))) : undefined;
  const ok = Buffer.from(okFrame);

  return () =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      socket.setNoDelay(true);
      // States: 'head' (reading the response head), 'frame' (waiting for the ok frame),
      // 'closing' (close sent, waiting for the server's close and FIN), 'refused' (reading to FIN).
      let state = 'head';
      let buffered = Buffer.alloc(0);
      let settled = false;
      const fail = (why) => {
        if (settled) return;
        settled = true;
        socket.destroy();
        reject(new Error(`127.0.0.1:${port}: ${why}`));
      };
      const sendClose = () => {
        state = 'closing';
        socket.write(clientFrame(0x8, CLOSE_1000));
      };
      socket.on('error', (error) => fail(error.message));
      socket.on('close', () => {
        if (state === 'closing' || state === 'refused') {
          if (!settled) {
            settled = true;
            resolve();
          }
        } else fail(`closed in state ${state}`);
      });
      socket.on('data', (chunk) => {
        if (state === 'refused' || state === 'closing') return; // read to the FIN
        buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
        if (state === 'head') {
          const end = buffered.indexOf('\r\n\r\n');
          if (end === -1) return;
          const head = buffered.toString('latin1', 0, end);
          if (!head.startsWith(statusLine))
            return fail(`answered ${head.slice(0, head.indexOf('\r\n'))}, expected ${spec.expect}`);
          buffered = buffered.subarray(end + 4);
          if (spec.expect !== 101) {
            state = 'refused';
            return;
          }
          if (helloFrame === undefined) return sendClose();
          state = 'frame';
          socket.write(helloFrame);
        }
        if (state === 'frame') {
          if (buffered.length < 2) return;
          const length = buffered[1] & 0x7f;
          if (buffered.length < 2 + length) return;
          if (buffered[0] !== 0x81 || !buffered.subarray(2, 2 + length).equals(ok))
            return fail(`unexpected frame ${buffered.toString('latin1', 0, 80)}`);
          sendClose();
        }
      });
      socket.write(request);
    });
}
