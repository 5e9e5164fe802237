/*
 * One app, built the same way in every framework the adapters claim: GET /limited behind
 * `rateLimit`, POST /auth behind `authGuard`, POST /webhook behind `webhookGuard`. The suite sends
 * identical raw requests to each and compares status, headers and bodies exactly.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AuthOutcome, MaybePromise } from '@portcullis/core';
import type {
  AuthGateOptions,
  ConcurrencyGateOptions,
  RequestGateOptions,
  WebhookGateOptions,
} from '@portcullis/core/adapter';
import { Readable } from 'node:stream';
import { type ServerType, serve } from '@hono/node-server';
import * as px from '@portcullis/express';
import portcullis, * as pf from '@portcullis/fastify';
import * as pw from '@portcullis/fetch';
import * as ph from '@portcullis/hono';
import * as pk from '@portcullis/koa';
import express5 from 'express';
import express4 from 'express4';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { type Context, Hono, type MiddlewareHandler } from 'hono';
import Koa3, { type Middleware } from 'koa';
import Koa2 from 'koa2';
import supertest from 'supertest';

/** What every framework's request object offers; the suite's callbacks read only this. */
export interface AnyRequest {
  readonly headers: IncomingHttpHeaders;
}

/** Which guards the app mounts, with which options. */
export interface AppSpec {
  readonly rateLimit?: RequestGateOptions<AnyRequest>;
  /** Mount the `rateLimit` factory itself on /uncalled (the classic mistake), not its result. */
  readonly mountUncalled?: boolean;
  /** More `rateLimit` middlewares on /limited, run before `rateLimit` (stacked limits). */
  readonly stacked?: readonly RequestGateOptions<AnyRequest>[];
  readonly auth?: Omit<AuthGateOptions<AnyRequest>, 'verify'> & {
    verify: (req: AnyRequest) => MaybePromise<AuthOutcome>;
  };
  readonly webhook?: WebhookGateOptions<AnyRequest>;
  /** GET /busy behind `concurrency`; its handler waits on `holds` (see {@link busy}). */
  readonly concurrency?: ConcurrencyGateOptions<AnyRequest>;
  /**
   * The /limited handler charges this many units through its `rateLimit`'s `charge(req, units)`
   * before it answers, and answers what was spent as `charged` (the Fastify plugin's route through
   * `request.chargeRateLimit`).
   */
  readonly charge?: (req: AnyRequest) => number;
}

/**
 * Latches the /busy handler waits on: a request with `x-hold: <id>` is answered once the test
 * opens `<id>`; `reached(id)` resolves when its handler started (its slot is held).
 */
export class Holds {
  readonly #open = new Map<string, () => void>();
  readonly #gates = new Map<string, Promise<void>>();
  readonly #reached = new Map<string, { promise: Promise<void>; resolve: () => void }>();

  #reach(id: string) {
    let r = this.#reached.get(id);
    if (r === undefined) {
      let resolve = () => {};
      const promise = new Promise<void>((res) => {
        resolve = res;
      });
      r = { promise, resolve };
      this.#reached.set(id, r);
    }
    return r;
  }

  /** What the handler awaits for `id`. */
  wait(id: string): Promise<void> {
    this.#reach(id).resolve();
    let gate = this.#gates.get(id);
    if (gate === undefined) {
      gate = new Promise<void>((resolve) => this.#open.set(id, resolve));
      this.#gates.set(id, gate);
    }
    return gate;
  }

  /** Resolves once the handler of `id` runs. */
  reached(id: string): Promise<void> {
    return this.#reach(id).promise;
  }

  /** Lets the handler of `id` answer. */
  open(id: string): void {
    if (!this.#gates.has(id)) void this.wait(id);
    this.#open.get(id)?.();
  }
}

/** The latches of every /busy handler. */
export const holds = new Holds();

/** The /busy handler's work: wait on `x-hold`, throw on `x-throw`. */
async function busy(req: AnyRequest): Promise<void> {
  const id = req.headers['x-hold'];
  if (typeof id === 'string') await holds.wait(id);
  if (req.headers['x-throw'] !== undefined) throw new Error('the handler failed');
}

/** One request: the suite always connects from 127.0.0.1 (supertest) or injects 127.0.0.1. */
export interface Call {
  readonly method?: 'GET' | 'POST';
  readonly path: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Aborts an in-process Fetch request, as a client going away does (hono/fetch only). */
  readonly signal?: AbortSignal;
}

/** A response, normalised: lower-case header names, string values, the raw body text. */
export interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
}

/** A running app. */
export interface App {
  /** The port it listens on (absent for in-process injection). */
  readonly port?: number;
  send(call: Call): Promise<Reply>;
  close(): Promise<void>;
}

/** What a handler's charge answered: the units, or the code of its rejection. */
function settled(charge: Promise<number> | undefined): Promise<number | string | undefined> {
  return Promise.resolve(charge).catch((e: { code?: string }) => e.code ?? String(e));
}

/** A framework (major version and transport) under test. */
export interface Framework {
  readonly name: string;
  /** Whether requests cross a real socket (a client can abort them). */
  readonly overSocket: boolean;
  /** Builds and starts the app; rejects with the adapter's config error for bad options. */
  build(spec: AppSpec): Promise<App>;
}

/** The status the /limited handler answers: `x-status` when the test asks for one, else 200. */
function statusOf(req: AnyRequest): number {
  const asked = Number(req.headers['x-status']);
  return Number.isInteger(asked) && asked >= 200 && asked < 600 ? asked : 200;
}

function normalise(headers: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined)
      out[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

async function listen(handler: http.RequestListener): Promise<App> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    send: (call) => overHttp(`http://127.0.0.1:${port}`, call),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

async function overHttp(base: string, call: Call): Promise<Reply> {
  const agent = supertest(base);
  const req = call.method === 'POST' ? agent.post(call.path) : agent.get(call.path);
  const res = await req.set(call.headers ?? {});
  return {
    status: res.status,
    headers: normalise(res.headers as Record<string, unknown>),
    text: res.text,
  };
}

function expressFramework(name: string, express: typeof express5): Framework {
  return {
    name,
    overSocket: true,
    async build(spec) {
      const app = express();
      if (spec.rateLimit) {
        const stacked = (spec.stacked ?? []).map((o) => px.rateLimit(o));
        const limiter = px.rateLimit(spec.rateLimit);
        app.get('/limited', ...stacked, limiter, async (req, res) => {
          if (req.headers['x-hang'] !== undefined) return;
          const charged = spec.charge && (await settled(limiter.charge(req, spec.charge(req))));
          res.status(statusOf(req)).json({ decision: req.rateLimit ?? null, charged });
        });
      }
      if (spec.concurrency)
        app.get('/busy', px.concurrency(spec.concurrency), (req, res, next) => {
          busy(req).then(() => res.json({ ok: true }), next);
        });
      if (spec.mountUncalled) {
        app.get('/uncalled', px.rateLimit as unknown as express5.RequestHandler, (_req, res) =>
          res.send('unreachable'),
        );
        app.use(((err: Error & { code?: string }, _req, res, _next) => {
          res.status(500).json({ code: err.code, message: err.message });
        }) as express5.ErrorRequestHandler);
      }
      if (spec.auth)
        app.post('/auth', px.authGuard(spec.auth), (_req, res) => res.json({ ok: true }));
      if (spec.webhook)
        app.post('/webhook', px.webhookGuard(spec.webhook), (_req, res) =>
          res.type('text').send('ok'),
        );
      return listen(app);
    },
  };
}

function koaFramework(name: string, Koa: typeof Koa3): Framework {
  return {
    name,
    overSocket: true,
    async build(spec) {
      const routes = new Map<string, [Middleware, Middleware]>();
      if (spec.rateLimit) {
        const chain = [...(spec.stacked ?? []), spec.rateLimit].map((o) => pk.rateLimit(o));
        const limited: Middleware = (ctx, next) =>
          chain.reduceRight<() => Promise<unknown>>(
            (downstream, mw) => () => Promise.resolve(mw(ctx, downstream)),
            () => Promise.resolve(next()),
          )();
        routes.set('GET /limited', [
          limited,
          async (ctx) => {
            if (ctx.headers['x-hang'] !== undefined) return new Promise(() => {});
            const own = chain[chain.length - 1];
            const charged =
              spec.charge && (await settled(own?.charge(ctx, spec.charge(ctx.request))));
            ctx.status = statusOf(ctx.request);
            ctx.body = { decision: ctx.state.rateLimit ?? null, charged };
            return undefined;
          },
        ]);
      }
      if (spec.auth) {
        routes.set('POST /auth', [
          pk.authGuard(spec.auth),
          (ctx) => {
            ctx.body = { ok: true };
          },
        ]);
      }
      if (spec.webhook) {
        routes.set('POST /webhook', [
          pk.webhookGuard(spec.webhook),
          (ctx) => {
            ctx.type = 'text';
            ctx.body = 'ok';
          },
        ]);
      }
      if (spec.concurrency) {
        routes.set('GET /busy', [
          pk.concurrency(spec.concurrency),
          async (ctx) => {
            await busy(ctx.request);
            ctx.body = { ok: true };
          },
        ]);
      }
      if (spec.mountUncalled) {
        routes.set('GET /uncalled', [
          pk.rateLimit as unknown as Middleware,
          (ctx) => {
            ctx.body = 'unreachable';
          },
        ]);
      }
      const app = new Koa();
      app.silent = true;
      app.use(async function errors(ctx, next) {
        try {
          await next();
        } catch (error) {
          const e = error as Error & { code?: string };
          ctx.status = 500;
          ctx.body = { code: e.code, message: e.message };
        }
      });
      app.use(function route(ctx, next) {
        const chain = routes.get(`${ctx.method} ${ctx.path}`);
        if (chain === undefined) return next();
        const [guard, handler] = chain;
        return guard(ctx, () => Promise.resolve(handler(ctx, next)));
      });
      return listen(app.callback());
    },
  };
}

/**
 * Fastify, mounted either through the plugin (global options, other routes opted out with
 * `config.rateLimit: false`) or with the named factories as route `onRequest` hooks.
 */
function fastifyFramework(
  name: string,
  mount: 'plugin' | 'hooks',
  transport: 'inject' | 'listen',
): Framework {
  return {
    name,
    overSocket: transport === 'listen',
    async build(spec) {
      const app: FastifyInstance = Fastify();
      try {
        if (spec.rateLimit) {
          const own = mount === 'plugin' ? undefined : pf.rateLimit(spec.rateLimit);
          const handler = async (
            request: AnyRequest & { rateLimit?: unknown },
            reply: { code(n: number): unknown },
          ) => {
            if (request.headers['x-hang'] !== undefined) return new Promise(() => {});
            const units = spec.charge?.(request);
            // The plugin's routes charge through the request (request.chargeRateLimit).
            const charged =
              units === undefined
                ? undefined
                : await settled(
                    own === undefined
                      ? (request as unknown as FastifyRequest).chargeRateLimit(units)
                      : own.charge(request as never, units),
                  );
            reply.code(statusOf(request));
            return { decision: request.rateLimit ?? null, charged };
          };
          const stacked = (spec.stacked ?? []).map((o) => pf.rateLimit(o));
          if (own === undefined) {
            await app.register(portcullis, spec.rateLimit);
            app.get('/limited', { onRequest: stacked }, handler);
          } else {
            app.get('/limited', { onRequest: [...stacked, own] }, handler);
          }
        }
        const optOut = { rateLimit: false as const };
        if (spec.mountUncalled) {
          app.setErrorHandler((error: Error & { code?: string }, _request, reply) => {
            reply.code(500).send({ code: error.code, message: error.message });
          });
          app.get(
            '/uncalled',
            {
              onRequest: pf.rateLimit as unknown as ReturnType<typeof pf.rateLimit>,
              config: optOut,
            },
            async () => 'unreachable',
          );
        }
        if (spec.auth)
          app.post('/auth', { onRequest: pf.authGuard(spec.auth), config: optOut }, async () => ({
            ok: true,
          }));
        if (spec.concurrency && mount === 'plugin' && !spec.rateLimit)
          await app.register(portcullis, { global: false });
        if (spec.concurrency)
          app.get(
            '/busy',
            // The plugin takes it per route in config.concurrency; without it, the hook.
            mount === 'plugin'
              ? { config: { ...optOut, concurrency: spec.concurrency as never } }
              : { onRequest: pf.concurrency(spec.concurrency), config: optOut },
            async (request) => {
              await busy(request);
              return { ok: true };
            },
          );
        if (spec.webhook) {
          app.post(
            '/webhook',
            { onRequest: pf.webhookGuard(spec.webhook), config: optOut },
            async (_req, reply) => reply.type('text/plain; charset=utf-8').send('ok'),
          );
        }
        await app.ready();
      } catch (error) {
        await app.close();
        throw error;
      }
      if (transport === 'listen') {
        await app.listen({ host: '127.0.0.1', port: 0 });
        const { port } = app.server.address() as AddressInfo;
        return {
          port,
          send: (call) => overHttp(`http://127.0.0.1:${port}`, call),
          close: () => app.close(),
        };
      }
      return {
        async send(call) {
          const res = await app.inject({
            method: call.method ?? 'GET',
            url: call.path,
            headers: { ...call.headers },
            remoteAddress: '127.0.0.1',
          });
          return { status: res.statusCode, headers: normalise(res.headers), text: res.body };
        },
        close: () => app.close(),
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Fetch-style adapters (Hono, @portcullis/fetch). Their callbacks receive a context or a Fetch
// `Request`, whose headers are a `Headers` object: the suite's callbacks, written against
// `req.headers[name]`, are handed a view with the headers as a record (lower-case names).

/** The options that are functions of the request (the suite's callbacks read `req.headers`). */
const REQUEST_CALLBACKS = [
  'limit',
  'windowMs',
  'key',
  'skip',
  'cost',
  'requestWasSuccessful',
  'chargeAfter',
  'verify',
  'account',
] as const;

function headersView(headers: Headers): AnyRequest {
  const record: Record<string, string> = {};
  headers.forEach((value, name) => {
    record[name] = value;
  });
  return { headers: record };
}

/**
 * The options with every request callback reading `view(req)` instead of `req` (typed `never`:
 * the result is the adapter's options, which the suite's types do not describe).
 */
function translated<Req>(options: object, view: (req: Req) => AnyRequest, extra: object): never {
  const out: Record<string, unknown> = { ...options, ...extra };
  for (const name of REQUEST_CALLBACKS) {
    const fn = out[name];
    if (typeof fn === 'function')
      out[name] = (req: Req, ...rest: unknown[]) => fn(view(req), ...rest);
  }
  return out as never;
}

const JSON_HEADERS = { 'Content-Type': 'application/json; charset=utf-8' };
const TEXT_HEADERS = { 'Content-Type': 'text/plain; charset=utf-8' };
const jsonResponse = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: JSON_HEADERS });
const configErrorResponse = (error: unknown) => {
  const e = error as Error & { code?: string };
  return jsonResponse({ code: e.code, message: e.message }, 500);
};

async function reply(response: Response): Promise<Reply> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: response.status, headers, text: await response.text() };
}

/** A Fetch request for a call, as a client on 127.0.0.1 would send it. */
function fetchRequest(call: Call, signal?: AbortSignal): Request {
  return new Request(`http://127.0.0.1${call.path}`, {
    method: call.method ?? 'GET',
    headers: call.headers ?? {},
    ...(signal !== undefined && { signal }),
  });
}

/**
 * Hono, served by a real `@hono/node-server` server (the default client address: its socket) or
 * called in-process with `app.request` (the address from `clientAddress`).
 */
function honoFramework(name: string, transport: 'node-server' | 'request'): Framework {
  const view = (c: Context) => headersView(c.req.raw.headers);
  const extra = transport === 'request' ? { clientAddress: () => '127.0.0.1' } : {};
  const opts = (o: object) => translated(o, view, extra);
  return {
    name,
    overSocket: transport === 'node-server',
    async build(spec) {
      const app = new Hono();
      app.onError(configErrorResponse);
      if (spec.rateLimit) {
        const chain = [...(spec.stacked ?? []), spec.rateLimit].map((o) => ph.rateLimit(opts(o)));
        for (const mw of chain) app.use('/limited', mw);
        app.get('/limited', async (c) => {
          if (c.req.header('x-hang') !== undefined) await new Promise(() => {});
          const charged =
            spec.charge &&
            (await settled(chain[chain.length - 1]?.charge(c, spec.charge(view(c)))));
          return c.body(
            JSON.stringify({ decision: c.get('rateLimit') ?? null, charged }),
            statusOf(view(c)) as 200,
            JSON_HEADERS,
          );
        });
      }
      if (spec.mountUncalled)
        app.get('/uncalled', ph.rateLimit as unknown as MiddlewareHandler, (c) =>
          c.text('unreachable'),
        );
      if (spec.auth)
        app.post('/auth', ph.authGuard(opts(spec.auth)), (c) =>
          c.body(JSON.stringify({ ok: true }), 200, JSON_HEADERS),
        );
      if (spec.webhook)
        app.post('/webhook', ph.webhookGuard(opts(spec.webhook)), (c) =>
          c.body('ok', 200, TEXT_HEADERS),
        );
      if (spec.concurrency)
        app.get('/busy', ph.concurrency(opts(spec.concurrency)), async (c) => {
          await busy(view(c));
          return c.body(JSON.stringify({ ok: true }), 200, JSON_HEADERS);
        });
      if (transport === 'request')
        return {
          send: async (call) => reply(await app.request(fetchRequest(call, call.signal))),
          close: async () => {},
        };
      const server = await new Promise<ServerType>((resolve) => {
        const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
      });
      const { port } = server.address() as AddressInfo;
      return {
        port,
        send: (call) => overHttp(`http://127.0.0.1:${port}`, call),
        close: () =>
          new Promise<void>((resolve, reject) => {
            server.close((err) => (err ? reject(err) : resolve()));
            (server as http.Server).closeAllConnections();
          }),
      };
    },
  };
}

/** What the fetch handlers receive beside the request here: the peer, as Bun or Deno give it. */
interface PeerInfo {
  readonly remoteAddress: string | undefined;
}
type FetchRoute = (request: Request, info: PeerInfo) => Promise<Response> | Response;

/**
 * @portcullis/fetch handlers behind a real `node:http` server (a bridge that turns each request
 * into a Fetch `Request` whose signal aborts when the client leaves) or called directly.
 */
function fetchFramework(name: string, transport: 'bridge' | 'direct'): Framework {
  const view = (request: Request) => headersView(request.headers);
  const extra = { clientAddress: (_request: Request, info: PeerInfo) => info.remoteAddress };
  const opts = (o: object) => translated(o, view, extra);
  return {
    name,
    overSocket: transport === 'bridge',
    async build(spec) {
      const routes = new Map<string, FetchRoute>();
      if (spec.rateLimit) {
        const chain = [...(spec.stacked ?? []), spec.rateLimit].map((o) =>
          pw.rateLimit<Request, [PeerInfo]>(opts(o)),
        );
        const limited: FetchRoute = async (request, info) => {
          if (request.headers.get('x-hang') !== null) await new Promise(() => {});
          const charged =
            spec.charge &&
            (await settled(
              chain[chain.length - 1]?.charge(request, spec.charge(view(request)), info),
            ));
          return jsonResponse(
            { decision: pw.decisionOf(request) ?? null, charged },
            statusOf(view(request)),
          );
        };
        routes.set(
          'GET /limited',
          chain.reduceRight<FetchRoute>((handler, wrap) => wrap(handler), limited),
        );
      }
      if (spec.mountUncalled) routes.set('GET /uncalled', pw.rateLimit as unknown as FetchRoute);
      if (spec.auth) {
        const guard = pw.authGuard<Request, [PeerInfo]>(opts(spec.auth));
        routes.set(
          'POST /auth',
          guard(() => jsonResponse({ ok: true })),
        );
      }
      if (spec.webhook) {
        const guard = pw.webhookGuard<Request, [PeerInfo]>(opts(spec.webhook));
        routes.set(
          'POST /webhook',
          guard(() => new Response('ok', { headers: TEXT_HEADERS })),
        );
      }
      if (spec.concurrency) {
        const limit = pw.concurrency<Request, [PeerInfo]>(opts(spec.concurrency));
        routes.set(
          'GET /busy',
          limit(async (request) => {
            await busy(view(request));
            return jsonResponse({ ok: true });
          }),
        );
      }
      const dispatch = async (request: Request, info: PeerInfo): Promise<Response> => {
        const route = routes.get(`${request.method} ${new URL(request.url).pathname}`);
        if (route === undefined) return new Response('Not Found', { status: 404 });
        try {
          return await route(request, info);
        } catch (error) {
          return configErrorResponse(error);
        }
      };
      if (transport === 'direct')
        return {
          send: async (call) =>
            reply(await dispatch(fetchRequest(call, call.signal), { remoteAddress: '127.0.0.1' })),
          close: async () => {},
        };
      return listen((req, res) => {
        const aborted = new AbortController();
        res.once('close', () => {
          if (!res.writableFinished) aborted.abort();
        });
        const headers = new Headers();
        for (let i = 0; i + 1 < req.rawHeaders.length; i += 2)
          headers.append(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string);
        const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
        const request = new Request(`http://127.0.0.1${req.url}`, {
          method: req.method ?? 'GET',
          headers,
          signal: aborted.signal,
          ...(hasBody && { body: Readable.toWeb(req) as ReadableStream, duplex: 'half' }),
        } as RequestInit);
        dispatch(request, { remoteAddress: req.socket.remoteAddress })
          .then(async (response) => {
            const out: Record<string, string> = {};
            response.headers.forEach((value, name) => {
              out[name] = value;
            });
            res.writeHead(response.status, out);
            res.end(Buffer.from(await response.arrayBuffer()));
          })
          .catch((error: unknown) => {
            // The handler rejected, which the adapter promises never happens: a 599 fails the
            // test that sent the request with the error in the body, instead of hanging it.
            if (!res.headersSent) res.writeHead(599);
            res.end(String(error));
          });
      });
    },
  };
}

/** Every framework major and transport the adapters claim. */
export const frameworks: readonly Framework[] = [
  expressFramework('express 5', express5),
  expressFramework('express 4', express4),
  koaFramework('koa 3', Koa3),
  koaFramework('koa 2', Koa2),
  fastifyFramework('fastify 5 (plugin, inject)', 'plugin', 'inject'),
  fastifyFramework('fastify 5 (plugin, listening)', 'plugin', 'listen'),
  fastifyFramework('fastify 5 (hooks, inject)', 'hooks', 'inject'),
  honoFramework('hono 4 (@hono/node-server)', 'node-server'),
  honoFramework('hono 4 (app.request)', 'request'),
  fetchFramework('fetch (node:http bridge)', 'bridge'),
  fetchFramework('fetch (called directly)', 'direct'),
];

/** The rate-limit fields of a reply (absent ones left out), for exact comparison. */
export function limitHeaders(reply: Reply): Record<string, string> {
  const names = [
    'ratelimit-policy',
    'ratelimit',
    'retry-after',
    'x-ratelimit-limit',
    'x-ratelimit-remaining',
    'x-ratelimit-reset',
    'content-type',
  ];
  const out: Record<string, string> = {};
  for (const name of names)
    if (reply.headers[name] !== undefined) out[name] = reply.headers[name] as string;
  return out;
}

/** The JSON body of a reply. */
export function json(reply: Reply): unknown {
  return JSON.parse(reply.text);
}
