import type { RawRequest } from '../client.js';
import { type MaybePromise, mapMaybe } from '../promise.js';
import {
  type FailureLimiter,
  type FailureLimiterOptions,
  type FailureLimiterReconfig,
  failureLimiterOption,
  refusedUncounted,
} from '../failure-limiter.js';
import { func, parseOptions, required } from '../options.js';
import { presets } from '../presets.js';
import type { GateResult } from './answer.js';
import {
  type AdapterOptionSpec,
  type AuthOutcome,
  checkOutcome,
  closeAll,
  clientOptionSpec,
  flatLimiterOptions,
  flatLimiterSpec,
  type GateClientOptions,
  gateLimiter,
  gateResolver,
} from './gate-options.js';
import { webhookRefusals } from './refusals.js';

// Webhook senders are servers and never loopback-exempt: an `exemptLoopback` would be ignored.
const { exemptLoopback: _neverExempt, ...webhookLimiterSpec } = flatLimiterSpec;

/** Options of {@link createWebhookGate} (and of every adapter's `webhookGuard`). */
export interface WebhookGateOptions<Req>
  extends Omit<FailureLimiterOptions, 'exemptLoopback'>,
    GateClientOptions {
  /** Compares the webhook token. A missing token counts as a failure. */
  verify: (req: Req) => MaybePromise<AuthOutcome>;
  /**
   * A failure limiter to use. Excludes the limiter options (`maxAttempts`, `windowMs`, …), which
   * otherwise build the gate's own, with `presets.webhookAuth` for what is not given.
   */
  limiter?: FailureLimiter;
}

/** A compiled webhook gate. */
export interface WebhookGate<Req> {
  /** Runs `verify(req)` and the failure-path limiter; `raw` is the Node request behind `req`. */
  run(raw: RawRequest, req: Req): MaybePromise<GateResult>;
  /** The limiter in use. */
  readonly limiter: FailureLimiter;
  /** Changes the numbers in force (see `FailureLimiter.reconfigure`); earned lockouts are kept. */
  reconfigure(partial: FailureLimiterReconfig): void;
  /** Closes the limiter the gate built; a `limiter` you passed is yours to close. */
  close(): MaybePromise<void>;
}

/**
 * Webhook ingress (docs/design.md#webhooks): the limiter is consulted on the failure path only. A correct token
 * resets the client's counter and passes (even during a lockout); a wrong or missing token meets a
 * lockout already in force with a plain `429 Too Many Requests` and `Retry-After`, and is otherwise
 * counted and answered 401 — the failure that starts the lockout included (docs/design.md#failure-limiter).
 * @throws {PortcullisConfigError} for a wrong or unknown option
 */
export function createWebhookGate<Req>(
  options: WebhookGateOptions<Req>,
  extra: AdapterOptionSpec = {},
): WebhookGate<Req> {
  const where = 'webhookGuard';
  const o = parseOptions(
    options,
    {
      ...extra,
      verify: func,
      limiter: failureLimiterOption,
      ...webhookLimiterSpec,
      ...clientOptionSpec,
    },
    where,
  );
  const own = flatLimiterOptions(o, where);
  const verify = required(o.verify, 'verify', 'a function', where) as (
    req: Req,
  ) => MaybePromise<AuthOutcome>;
  const limiter = o.limiter ?? gateLimiter({ ...presets.webhookAuth, name: 'webhook' }, o, own);
  const resolve = gateResolver(o);
  const r = webhookRefusals();

  function decide(raw: RawRequest, outcome: AuthOutcome): MaybePromise<GateResult> {
    // Webhook senders are servers: keyed by client IP, never exempt, Origin irrelevant.
    const subject = { key: resolve(raw).ip ?? 'unknown', exempt: false };
    const found = checkOutcome(outcome);
    if (found === 'ok') {
      // The webhook contract: a right token resets the sender and passes, even during a lockout
      // (the sender proved it holds the secret). Unlike the auth gate, this is a reset.
      return mapMaybe(limiter.reset(subject), (d) => ({ ok: true, decision: d }));
    }
    // The failure path (docs/design.md#failure-limiter): a locked-out sender is refused uncounted; otherwise the
    // failure is counted and answered 401, even the one that starts the lockout.
    return mapMaybe(limiter.check(subject), (before) => {
      if (!before.allowed) return r.refuse(before);
      return mapMaybe(limiter.recordFailure(subject), (after) =>
        refusedUncounted(after) ? r.refuse(after) : r.failed(after, found),
      );
    });
  }

  return {
    run(raw: RawRequest, req: Req): MaybePromise<GateResult> {
      return mapMaybe(verify(req), (v) => decide(raw, v));
    },
    limiter,
    reconfigure: (partial: FailureLimiterReconfig) => limiter.reconfigure(partial),
    close: () => closeAll(o.limiter === undefined ? [limiter] : []),
  };
}
