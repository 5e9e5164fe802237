import { asDryRun, type Decision, withKey } from './decision.js';
import { channels, publishDecided, publishDecision } from './events.js';
import type { AuthLayer, StartedLockout } from './failure-limiter.js';
import type { FailureSetup } from './failure-options.js';
import { callSafely, reportHookError } from './safe-call.js';

/**
 * What a failure limiter tells the world about its decisions: the logger's warnings, the
 * diagnostics channels, the `watchLockouts` listeners (the gates' `onLockout`), and the dry-run
 * flag on every answer. The per-key state ops decide; this reports.
 */
export class FailureReports {
  readonly #setup: FailureSetup;
  readonly #listeners = new Set<(started: StartedLockout) => void>();
  /*
   * One warning per episode of a store full of lockouts, not one per refused request. The episode
   * ends only when the store is seen to take a new key again: an allowed answer for a key that
   * holds no failure (a check with every attempt left, a first failure counted). Any other answer
   * says nothing about room: a locked client between two new ones must not end the episode, or
   * alternating them logs once per request.
   */
  #overflowing = false;

  /** @param setup the limiter's config, logger and layer, read at each report (reconfigure changes them). */
  constructor(setup: FailureSetup) {
    this.#setup = setup;
  }

  /** Calls `listener` for every lockout started from now on; returns the function that stops it. */
  watch(listener: (started: StartedLockout) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** `d` as the limiter answers it: flagged and allowed in a dry run. */
  dry(d: Decision): Decision {
    return this.#setup.config.dryRun ? asDryRun(d) : d;
  }

  /**
   * A store's answer for `key` as the limiter's decision, published when it refuses. `fresh`: the
   * `remaining` of an allowed answer that proves the key was new to the store (`maxAttempts` for a
   * check, one less for a counted failure; -1 when no answer proves it).
   */
  finish(scope: string, key: string, d: Decision, fresh = -1): Decision {
    const out = withKey(d, key);
    const { name } = this.#setup.config;
    if (out.reason !== 'allowed' && out.reason !== 'locked') publishDecision(name, scope, out);
    if (out.reason === 'overflow') {
      if (!this.#overflowing) {
        this.#overflowing = true;
        this.#setup.logger?.warn(
          { code: 'PORTCULLIS_OVERFLOW', limiter: name, scope, key },
          `Portcullis: limiter "${name}" is full of lockouts and refuses new keys (reason 'overflow'); further overflows are published on portcullis:overflow until the store takes a new key`,
        );
      }
    } else if (this.#overflowing && out.reason === 'allowed' && out.remaining === fresh) {
      this.#overflowing = false;
    }
    return this.dry(out);
  }

  /**
   * portcullis:decision (metrics): a check's answer is the attempt's decision (one per attempt;
   * recordFailure and recordSuccess follow it). Sent only while someone listens.
   */
  decided(scope: string, d: Decision): Decision {
    if (channels.decision.hasSubscribers) publishDecided(this.#setup.config.name, scope, d);
    return d;
  }

  /** A lockout `out` earned by failures, lasting `lockoutMs`: warned, published, watched. */
  earned(scope: string, key: string, out: Decision, lockoutMs: number): void {
    const { config, earned, logger } = this.#setup;
    logger?.warn(
      {
        code: 'AUTH_RATE_LIMITED',
        limiter: config.name,
        scope,
        key,
        layer: earned,
        lockoutMs,
        dryRun: config.dryRun,
      },
      `AUTH_RATE_LIMITED: ${config.maxAttempts} failed attempts (${earned} layer); locking out scope=${scope} key=${key} for ${lockoutMs}ms${config.dryRun ? ' (dry run)' : ''}`,
    );
    if (channels.lockout.hasSubscribers)
      channels.lockout.publish({
        limiter: config.name,
        scope,
        decision: out,
        ...(earned !== 'client' && { layer: earned }),
      });
    this.#started(earned, scope, key, lockoutMs, out);
  }

  /** A ban `out` of `ms` set by hand: warned, published, watched. */
  banned(scope: string, key: string, out: Decision, ms: number): void {
    const { config, logger } = this.#setup;
    logger?.warn(
      { code: 'AUTH_RATE_LIMITED', limiter: config.name, scope, key, layer: 'ban', ms },
      `AUTH_RATE_LIMITED: banned by hand; locking out scope=${scope} key=${key} for ${ms}ms (until ${out.retryAfterMs}ms from now)`,
    );
    if (channels.lockout.hasSubscribers)
      channels.lockout.publish({ limiter: config.name, scope, decision: out, layer: 'ban' });
    this.#started('ban', scope, key, ms, out);
  }

  /** The store forgot a subject: a metrics reader dropping its lockout from a gauge is right now. */
  reset(scope: string, out: Decision): void {
    if (channels.reset.hasSubscribers)
      channels.reset.publish({ limiter: this.#setup.config.name, scope, decision: out });
  }

  #started(layer: AuthLayer, scope: string, key: string, lockoutMs: number, d: Decision): void {
    // A listener that throws is the logger's to hear about: the lockout stands either way.
    for (const listener of this.#listeners)
      callSafely(
        listener,
        [{ layer, scope, key, lockoutMs, retryAfterMs: d.retryAfterMs }],
        (err) =>
          reportHookError(
            this.#setup.logger,
            { hook: 'onLockout', limiter: this.#setup.config.name, err },
            'Portcullis: onLockout threw; the lockout stands',
          ),
      );
  }
}
