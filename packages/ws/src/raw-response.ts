import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { HttpAnswer } from '@portcullis/core/adapter';

/** Header names this module sets itself; an answer's own copies of them are dropped. */
const OWN_HEADERS = new Set(['connection', 'content-length']);

/**
 * Serialises a gate's answer as a complete HTTP/1.1 response for a socket that has left Node's
 * HTTP machinery (an `upgrade` socket): status line with the standard reason phrase, every header
 * of the answer, `Connection: close`, `Content-Length`, a blank line and the body.
 */
export function rawResponse(answer: HttpAnswer): string {
  let head = `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Unknown'}\r\n`;
  for (const [name, value] of Object.entries(answer.headers)) {
    if (!OWN_HEADERS.has(name.toLowerCase())) head += `${name}: ${value}\r\n`;
  }
  head += `Connection: close\r\nContent-Length: ${Buffer.byteLength(answer.body)}\r\n\r\n`;
  return head + answer.body;
}

/**
 * Writes `answer` and closes the socket: ended, then destroyed once the bytes are flushed. A socket
 * that can no longer be written is destroyed at once. The caller keeps an `error` listener on the
 * socket, so a client that resets the connection meanwhile cannot crash the process.
 */
export function refuseSocket(socket: Duplex, answer: HttpAnswer): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.once('finish', () => socket.destroy());
  socket.end(rawResponse(answer));
}
