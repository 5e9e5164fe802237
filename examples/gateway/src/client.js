// A small client for the gateway's frame protocol, used by the demo and the tests:
// `{ type: 'req', id, method, params }` → `{ type: 'res', id, ok, payload | error }`, plus
// `{ type: 'event', event, payload }` pushed by the gateway.
import { WebSocket } from 'ws';

/**
 * @typedef {object} ResFrame
 * @property {'res'} type
 * @property {string | number | null} id
 * @property {boolean} ok
 * @property {any} [payload]
 * @property {any} [error]
 */

/**
 * @typedef {object} EventFrame
 * @property {'event'} type
 * @property {string} event
 * @property {any} payload
 */

/**
 * @typedef {object} GatewayClient
 * @property {WebSocket} ws
 * @property {(method: string, params?: unknown) => Promise<ResFrame>} request sends a request and waits for its answer
 * @property {(frame: unknown) => Promise<ResFrame>} send sends any frame and waits for the next answer
 * @property {(event: string, timeoutMs: number) => Promise<EventFrame>} nextEvent waits for a pushed event
 * @property {Promise<{ code: number, reason: string }>} closed resolves when the socket closes
 * @property {() => void} close
 */

/**
 * Opens a socket to the gateway.
 * @param {string} url `ws://host:port/`
 * @param {{ origin?: string, headers?: Record<string, string> }} [options] `origin` makes the client
 *   present as a browser page (an `Origin` header)
 * @returns {Promise<GatewayClient>}
 */
export function openClient(url, options = {}) {
  const ws = new WebSocket(url, {
    ...(options.origin !== undefined && { origin: options.origin }),
    ...(options.headers !== undefined && { headers: options.headers }),
  });
  let seq = 0;
  /** @type {Array<(frame: ResFrame) => void>} */
  const waiting = [];
  /** @type {ResFrame[]} */
  const unclaimed = [];
  /** @type {EventFrame[]} */
  const events = [];
  /** @type {Array<{ event: string, resolve: (frame: EventFrame) => void }>} */
  const eventWaiters = [];

  const closed = new Promise((resolve) => {
    ws.on('close', (code, reason) => {
      resolve({ code, reason: String(reason) });
    });
  });

  ws.on('message', (data) => {
    const frame = JSON.parse(String(data));
    if (frame.type === 'event') {
      const i = eventWaiters.findIndex((w) => w.event === frame.event);
      if (i >= 0) eventWaiters.splice(i, 1)[0]?.resolve(frame);
      else events.push(frame);
      return;
    }
    const next = waiting.shift();
    if (next) next(frame);
    else unclaimed.push(frame);
  });

  /** @param {unknown} frame */
  function send(frame) {
    return new Promise((resolve, reject) => {
      const early = unclaimed.shift();
      if (early !== undefined) return resolve(early);
      waiting.push(resolve);
      ws.send(JSON.stringify(frame), (error) => {
        if (error) reject(error);
      });
      // `closed` never rejects: this only turns a close into this request's rejection.
      void closed.then(({ code, reason }) =>
        reject(new Error(`socket closed (${code} ${reason}) before an answer`)),
      );
    });
  }

  /** @type {GatewayClient} */
  const client = {
    ws,
    send: (frame) => /** @type {Promise<ResFrame>} */ (send(frame)),
    request: (method, params) =>
      /** @type {Promise<ResFrame>} */ (
        send({ type: 'req', id: `r${++seq}`, method, ...(params !== undefined && { params }) })
      ),
    nextEvent(event, timeoutMs) {
      const i = events.findIndex((e) => e.event === event);
      if (i >= 0) return Promise.resolve(/** @type {EventFrame} */ (events.splice(i, 1)[0]));
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no ${event} event within ${timeoutMs} ms`)),
          timeoutMs,
        );
        eventWaiters.push({
          event,
          resolve: (frame) => {
            clearTimeout(timer);
            resolve(frame);
          },
        });
      });
    },
    closed,
    close: () => ws.close(1000, 'bye'),
  };

  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(client));
    ws.once('error', reject);
  });
}

/**
 * Opens a socket and sends `connect`. On success the client stays open for requests; on refusal
 * the answer and the close code are returned.
 * @param {string} url
 * @param {{
 *   auth?: Record<string, unknown>,
 *   origin?: string,
 *   headers?: Record<string, string>,
 *   device?: { id: string },
 *   id?: string,
 * }} options
 * @returns {Promise<{ frame: ResFrame, client: GatewayClient, close?: { code: number, reason: string } }>}
 */
export async function connect(url, options) {
  const client = await openClient(url, {
    ...(options.origin !== undefined && { origin: options.origin }),
    ...(options.headers !== undefined && { headers: options.headers }),
  });
  const frame = await client.send({
    type: 'req',
    id: options.id ?? 'c1',
    method: 'connect',
    params: {
      ...(options.auth !== undefined && { auth: options.auth }),
      ...(options.device !== undefined && { device: options.device }),
    },
  });
  if (frame.ok) return { frame, client };
  return { frame, client, close: await client.closed };
}
