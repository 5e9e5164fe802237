import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { rawResponse, refuseSocket } from './raw-response.js';

describe('rawResponse', () => {
  it('writes the status line with its reason phrase, the answer headers, Connection and a byte Content-Length', () => {
    const text = rawResponse({
      status: 429,
      headers: { 'Retry-After': '300', 'Content-Type': 'application/json; charset=utf-8' },
      body: '{"a":"é"}',
    });
    expect(text).toBe(
      'HTTP/1.1 429 Too Many Requests\r\nRetry-After: 300\r\nContent-Type: application/json; charset=utf-8\r\n' +
        'Connection: close\r\nContent-Length: 10\r\n\r\n{"a":"é"}',
    );
  });

  it('keeps its own Connection and Content-Length over the answer’s', () => {
    const text = rawResponse({
      status: 401,
      headers: { connection: 'keep-alive', 'CONTENT-LENGTH': '99' },
      body: 'no',
    });
    expect(text).toBe(
      'HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno',
    );
  });

  it('names an unknown status', () => {
    expect(rawResponse({ status: 599, headers: {}, body: '' })).toMatch(
      /^HTTP\/1\.1 599 Unknown\r\n/,
    );
  });
});

describe('refuseSocket', () => {
  it('ends the socket with the response and destroys it once flushed', async () => {
    const socket = new PassThrough();
    refuseSocket(socket, { status: 503, headers: {}, body: 'down' });
    expect(socket.writableEnded).toBe(true);
    expect(String(socket.read())).toBe(
      'HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 4\r\n\r\ndown',
    );
    await new Promise((resolve) => socket.once('close', resolve));
    expect(socket.destroyed).toBe(true);
  });

  it('destroys a socket that can no longer be written', () => {
    const socket = new PassThrough();
    socket.end();
    refuseSocket(socket, { status: 401, headers: {}, body: '' });
    expect(socket.destroyed).toBe(true);
  });
});
