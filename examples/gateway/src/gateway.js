// The reference gateway: one Node HTTP server with a `ws` WebSocket endpoint, carrying every
// Portcullis limit (docs/design.md#limits). This file only puts the parts together and owns start
// and stop: connect.js (first-frame auth), rpc.js (methods, quotas, sessions), restart.js, hooks.js
// (webhooks), admin.js (operators' unlock and ban), sockets.js and http.js (the transports),
// status.js (the live board), metrics.js (GET /metrics) and limits.js (the failure limiters and
// the limits in words). Everything is in memory, in one process.
import { once } from 'node:events';
import { watch } from 'node:fs';
import { createAccessList, systemClock } from '@portcullis/core';
import { createClientResolver, systemTimers } from '@portcullis/core/adapter';
import { createAdmin } from './admin.js';
import { configHash, loadConfig, parseConfig, runningConfig } from './config.js';
import { createConnect } from './connect.js';
import { createHookRoute } from './hooks.js';
import { createHttpServer } from './http.js';
import { createFailureLimiters, reconfigureLimiters, statusLimiters } from './limits.js';
import { createJsonLogger } from './logger.js';
import { createMetrics } from './metrics.js';
import { createRestarts } from './restart.js';
import { createRpc } from './rpc.js';
import { createSockets } from './sockets.js';
import { createStatusBoard } from './status.js';

export { describeLimits } from './limits.js';
export { METHODS, SESSION_METHOD } from './rpc.js';

/** @import { Clock, Timers } from '@portcullis/core' */
/** @import { AddressInfo } from 'node:net' */
/** @import { JsonLogger } from './logger.js' */

/**
 * @typedef {object} GatewayOptions
 * @property {unknown} config the configuration (validated here; see `parseConfig`)
 * @property {string} [configPath] the file it came from; a restart re-reads it
 * @property {Clock} [clock] time source of every limiter (default: the system clock)
 * @property {Timers} [timers] timers of every limiter, the restart scheduler and the status
 *   heartbeat (default: the system's, unref'ed)
 * @property {JsonLogger} [logger] structured logger (default: JSON lines on stdout)
 */

/**
 * Creates the gateway. Nothing listens until `listen()`.
 * @param {GatewayOptions} options
 */
export function createGateway(options) {
  const bootConfig = parseConfig(options.config);
  const config = runningConfig(bootConfig);
  const clock = options.clock ?? systemClock;
  const timers = options.timers ?? systemTimers;
  const logger = options.logger ?? createJsonLogger();
  const startedAt = clock.now();
  const { trustedProxies } = bootConfig.gateway;
  const rl = bootConfig.gateway.auth.rateLimit;
  const services = { clock, timers, logger };

  const limiters = createFailureLimiters(rl, services);
  // Before any limiter decides: every decision from the first on is counted, and the failure
  // limiters' series are scraped at zero from the start.
  const metrics = createMetrics({
    clock,
    limiters: [limiters.auth, limiters.browser, limiters.webhook],
  });
  const resolveClient = createClientResolver({ trustedProxies, logger });
  // The status board reads the restart scheduler, the RPC quota store and session count and the
  // sockets, and all of them report to it; the callbacks below that name `board` or `sockets`
  // before those are built run only once the gateway serves.
  const restarts = createRestarts({
    ...services,
    config,
    bootConfig,
    configPath: options.configPath,
    // A due restart waits for the HTTP requests in flight (the server is built below).
    pendingWork: () => http.inFlight(),
    onRestarted: (frame) => {
      sockets.broadcast(frame);
      board.changed();
    },
  });
  // The operator's actions on lockouts, for the admin RPC methods and the /status unlock button.
  // The operators' allow and deny rules: matched by every connect before its credential.
  const access = createAccessList({ clock, timers, logger });
  const admin = createAdmin({
    limiters,
    layers: () => connect.layers,
    access,
    logger,
    changed: () => board.changed(),
  });
  const rpc = createRpc({
    ...services,
    config,
    scheduler: restarts.scheduler,
    recordRefusal: (entry) => board.record(entry),
    admin,
  });
  const board = createStatusBoard({
    clock,
    timers,
    ...statusLimiters(() => config.current().gateway.auth.rateLimit, limiters, rpc.quotaStore),
    // Read at each snapshot (connect is built below).
    layers: () => connect.layers,
    extra: () => ({
      gateway: {
        name: config.current().gateway.name,
        uptimeMs: clock.now() - startedAt,
        configHash: configHash(config.current()),
        connections: sockets.counts(),
      },
      sessions: rpc.sessionStatus(),
      restart: restarts.status(),
    }),
  });
  const connect = createConnect({
    config,
    access,
    limiter: limiters.auth,
    browserLimiter: limiters.browser,
    trustedProxies,
    logger,
    board,
  });
  const sockets = createSockets({
    handshake: connect.handshake,
    dispatch: rpc.dispatch,
    resolveClient,
    timers,
    logger,
    board,
  });
  const http = createHttpServer({
    config,
    board,
    metrics,
    onHook: createHookRoute({ config, limiter: limiters.webhook, trustedProxies, logger, board }),
    wss: sockets.wss,
    admin,
    resolveClient,
    limiter: limiters.auth,
    browserLimiter: limiters.browser,
    trustedProxies,
    logger,
  });
  const { server } = http;

  // Whoever replaces the config (reload, restart, config.patch/apply over RPC), the failure
  // limiters take its numbers live (lockouts kept) and the board shows its hash. Port and proxies
  // keep their boot values until the process restarts.
  config.onReplace((next) => {
    reconfigureLimiters(limiters, next.gateway.auth.rateLimit);
    board.changed();
  });

  /**
   * Re-reads the config file and applies it when it changed; an invalid file is logged and the
   * config in force kept.
   * @param {string} reason what asked for it (`SIGHUP`, `file changed`)
   * @returns {boolean} whether a new config is now in force
   */
  function reload(reason) {
    if (options.configPath === undefined) return false;
    let next;
    try {
      next = loadConfig(options.configPath);
    } catch (error) {
      logger.error(
        { err: error, reason },
        'config reload: the file is invalid; keeping the config in force',
      );
      return false;
    }
    const before = configHash(config.current());
    const after = configHash(next);
    if (after === before) return false;
    config.replace(next);
    logger.info(
      { event: 'gateway.config.reloaded', reason, configHash: after, previous: before },
      `config reloaded (${reason})`,
    );
    return true;
  }

  /** @type {import('node:fs').FSWatcher | undefined} */
  let watcher;
  /** @type {unknown} */
  let pending;

  let closed = false;
  /** @type {{ port: number, host: string, url: string, wsUrl: string } | undefined} */
  let address;

  return {
    server,
    /** The connect-auth instance (its limiters can reset a client by hand). */
    connectAuth: connect.connectAuth,
    /** Both connect auths: the shared secret's and the password's (`secrets`), device tokens'. */
    connectAuths: connect.connectAuths,
    /** The auth layers' limiters (pair, account, spray, scope): `lockouts()`, `reset`. */
    layers: connect.layers,
    scheduler: restarts.scheduler,
    /** HTTP requests in flight (the /status/events streams left out): a due restart waits for them. */
    inFlight: () => http.inFlight(),
    /** The exposition text GET /metrics serves. */
    scrapeMetrics: () => metrics.scrape(),
    /** The status board (what /status.json serves). */
    status: () => board.snapshot(),
    /** The config in force. */
    config: () => config.current(),
    /** Where it listens, once listening. */
    address: () => address,
    /** Re-reads the config file now (what SIGHUP does); true when a new config is in force. */
    reload,
    /**
     * Reloads the config whenever its file changes (editors write in bursts: one reload per
     * 100 ms of quiet). Stopped by `close()`.
     */
    watchConfig() {
      if (options.configPath === undefined || watcher !== undefined) return;
      watcher = watch(options.configPath, () => {
        if (pending !== undefined) timers.clearTimeout(pending);
        pending = timers.setTimeout(() => {
          pending = undefined;
          reload('file changed');
        }, 100);
      });
      watcher.on('error', (error) => logger.error({ err: error }, 'config watch failed'));
    },
    logger,
    /**
     * Starts listening (default: the config's port on 127.0.0.1).
     * @param {{ port?: number, host?: string }} [where]
     */
    async listen(where = {}) {
      const host = where.host ?? '127.0.0.1';
      server.listen(where.port ?? bootConfig.gateway.port, host);
      await once(server, 'listening');
      const port = /** @type {AddressInfo} */ (server.address()).port;
      const base = `${host.includes(':') ? `[${host}]` : host}:${port}`;
      address = { port, host, url: `http://${base}`, wsUrl: `ws://${base}/` };
      return address;
    },
    /** Closes sockets, streams, timers and limiters. */
    async close() {
      if (closed) return;
      closed = true;
      watcher?.close();
      if (pending !== undefined) timers.clearTimeout(pending);
      board.close();
      await access.close();
      restarts.scheduler.close();
      sockets.close();
      server.closeAllConnections();
      if (server.listening) await new Promise((resolve) => server.close(() => resolve(undefined)));
      await connect.close();
      await Promise.all([
        limiters.auth.close(),
        limiters.browser.close(),
        limiters.webhook.close(),
        rpc.close(),
        metrics.close(),
      ]);
    },
  };
}

/** @typedef {ReturnType<typeof createGateway>} Gateway */
