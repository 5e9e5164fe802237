// The gateway's failure limiters and the limits in words. The three failure limiters are built
// here, once per process (docs/design.md#per-process-state), rather than inside the gates that use them: `auth` and
// `auth-browser` guard both `connect` and the /status bearer check, so a lockout earned on one
// holds on the other, and the status board reads each one's store. The control-plane quota and
// the session limit live in rpc.js, the restart scheduler in restart.js.
import { createFailureLimiter, presets } from '@portcullis/core';
import { controlPlaneWriteMethods } from '@portcullis/rpc';
import { SESSION_METHOD } from './rpc.js';
import { formatMs } from './status.js';

/** @import { Clock, MemoryStore, ScopeBudgetOptions, Timers } from '@portcullis/core' */

/**
 * The scope budget of the shared secret and of the password (docs/design.md#defence-in-depth):
 * 300 failures an hour in one class, from all clients together, put it under attack for an hour,
 * when only clients that logged in before (trusted, 30 days) get in. Why these numbers: one client
 * is held by the client limiter to 10 failures, then 5 minutes locked out, so even a client stuck
 * on a wrong secret at full speed fails at most 120 times an hour (130 in any closed hour), and a
 * person mistyping fails a few times: 300 is two stuck clients for a whole hour plus dozens of
 * typos. A botnet of 5 000 addresses, each kept to the same 120 an hour, could try 600 000 guesses
 * an hour without it; with it, 300 an hour at most while it stays unnoticed, and at full speed
 * (5 000 × 10 a minute) it spends the 300 in under half a second, then waits out the hour with
 * every new address refused. README.md#defence-in-depth says the same.
 * @type {Readonly<ScopeBudgetOptions>}
 */
export const SCOPE_BUDGET = Object.freeze({
  maxAttempts: 300,
  windowMs: 3_600_000,
  lockoutMs: 3_600_000,
});
/** @import { GatewayConfig, RateLimitConfig } from './config.js' */
/** @import { JsonLogger } from './logger.js' */

/**
 * Builds the `auth`, `auth-browser` and `webhook` failure limiters, each with its own memory store.
 * @param {RateLimitConfig} rl `gateway.auth.rateLimit` of the boot config
 * @param {{ clock: Clock, timers: Timers, logger: JsonLogger }} services
 */
export function createFailureLimiters(rl, { clock, timers, logger }) {
  return {
    auth: createFailureLimiter({ ...rl, name: 'auth', clock, timers, logger }),
    browser: createFailureLimiter({
      ...rl,
      exemptLoopback: false, // a page in a local browser is never exempt (docs/design.md#browser-origins)
      name: 'auth-browser',
      clock,
      timers,
      logger,
    }),
    webhook: createFailureLimiter({
      ...presets.webhookAuth,
      name: 'webhook',
      clock,
      timers,
      logger,
    }),
  };
}

/** @typedef {ReturnType<typeof createFailureLimiters>} FailureLimiters */

/**
 * What the status board shows of each limiter: a title, the rule in words and the store it reads.
 * @param {() => RateLimitConfig} numbers `gateway.auth.rateLimit` of the config in force (a reload
 *   changes it, and the board then shows the new rule)
 * @param {FailureLimiters} limiters
 * @param {MemoryStore} quotaStore the control-plane quota's store
 */
export function statusLimiters(numbers, limiters, quotaStore) {
  const w = presets.webhookAuth;
  const q = presets.controlPlaneWrites;
  return {
    failureLimiters: [
      {
        name: 'auth',
        title: 'Gateway auth (CLI and server clients, no Origin)',
        get rule() {
          const rl = numbers();
          return `${rl.maxAttempts} failures / ${formatMs(rl.windowMs)} → ${formatMs(rl.lockoutMs)} lockout, per client IP and credential class${rl.exemptLoopback ? '; direct-local loopback exempt' : ''}`;
        },
        limiter: limiters.auth,
        store: /** @type {MemoryStore} */ (limiters.auth.store),
      },
      {
        name: 'auth-browser',
        title: 'Browser connections (with Origin)',
        get rule() {
          const rl = numbers();
          return `same numbers, never exempt; from loopback one bucket per Origin, and every page also counts against its site's ${rl.maxAttempts} and all local pages' ${3 * rl.maxAttempts} failures / ${formatMs(rl.windowMs)}`;
        },
        limiter: limiters.browser,
        store: /** @type {MemoryStore} */ (limiters.browser.store),
        // core's per-site and all-origins budgets around the browser limiter (their own store)
        aggregates: ['auth-browser-site', 'auth-browser-all-origins'],
      },
      {
        name: 'webhook',
        title: 'Webhook ingress (POST /hooks/*)',
        rule: `${w.maxAttempts} failures / ${formatMs(w.windowMs)} → ${formatMs(w.lockoutMs)} lockout per client IP; loopback not exempt`,
        limiter: limiters.webhook,
        store: /** @type {MemoryStore} */ (limiters.webhook.store),
      },
    ],
    windowLimiters: [
      {
        name: 'control-plane',
        title: 'Control-plane writes',
        rule: `${q.limit} calls / ${formatMs(q.windowMs)} per method per device + IP (${controlPlaneWriteMethods.join(', ')})`,
        store: quotaStore,
      },
    ],
  };
}

/** @param {number} ms a whole number of hours */
const hours = (ms) => `${ms / 3_600_000} h`;

/**
 * The limits in force, in words (the start banner and the README's table say the same).
 * @param {GatewayConfig} config
 * @returns {Array<[string, string]>}
 */
export function describeLimits(config) {
  const rl = config.gateway.auth.rateLimit;
  const w = presets.webhookAuth;
  return [
    [
      'gateway auth',
      `${rl.maxAttempts} failures / ${formatMs(rl.windowMs)} → ${formatMs(rl.lockoutMs)} lockout, per client IP and credential class (shared-secret, password, device-token)${rl.exemptLoopback ? '; a direct-local CLI is exempt' : ''}`,
    ],
    [
      'scope budget',
      `${SCOPE_BUDGET.maxAttempts} failures / ${hours(SCOPE_BUDGET.windowMs)} of the shared secret (and of the password) from all clients → under attack for ${hours(SCOPE_BUDGET.lockoutMs)}: only clients that logged in before get in`,
    ],
    [
      'device accounts',
      'a device token counts against the device it names: 20 in a row per client and device, 100 / 1 h per device (then only its trusted clients), 10 devices / 10 min per client',
    ],
    [
      'browser origins',
      `same numbers, never exempt; from loopback one bucket per Origin, ${rl.maxAttempts} per site and ${3 * rl.maxAttempts} across all local pages`,
    ],
    [
      'webhooks',
      `${w.maxAttempts} failures / ${formatMs(w.windowMs)} → ${formatMs(w.lockoutMs)} lockout per client IP (plain 429 + Retry-After)`,
    ],
    [
      'control-plane',
      `${presets.controlPlaneWrites.limit} calls / ${formatMs(presets.controlPlaneWrites.windowMs)} per write method per device + IP (config.patch, config.apply, plugins.setEnabled, gateway.restart.request, …)`,
    ],
    [
      'session creation',
      `${presets.sessionCreation.limit} / ${formatMs(presets.sessionCreation.windowMs)} (${SESSION_METHOD}; re-opening a known sessionId is free)`,
    ],
    [
      'restart',
      `coalesced, ≥ ${formatMs(presets.restart.cooldownMs)} apart, ${formatMs(presets.restart.defaultDelayMs)} default delay (simulated: re-reads the config)`,
    ],
  ];
}

/**
 * Puts new failure-limiter numbers in force without a restart: history and earned lockouts are
 * kept, a lowered `maxAttempts` applies at once (docs/design.md#failure-limiter).
 * @param {FailureLimiters} limiters
 * @param {RateLimitConfig} rl
 */
export function reconfigureLimiters(limiters, rl) {
  const { maxAttempts, windowMs, lockoutMs } = rl;
  limiters.auth.reconfigure({
    maxAttempts,
    windowMs,
    lockoutMs,
    exemptLoopback: rl.exemptLoopback,
  });
  limiters.browser.reconfigure({ maxAttempts, windowMs, lockoutMs });
}
