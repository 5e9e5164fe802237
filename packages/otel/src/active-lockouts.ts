/**
 * The lockouts in force per limiter, learnt from `portcullis:lockout` events and forgotten on
 * `portcullis:reset` (an unlock) or when their end comes: one end time per subject (scope and key),
 * so a lockout started again replaces the one before instead of counting twice. Memory is bounded:
 * at most `maxPerLimiter` subjects per limiter (past it, the one seen starting first is forgotten,
 * so the gauge can only under-count, never grow without bound). The keys are held in memory only,
 * never reported: the limiter names are configuration, never taken from a request.
 */
export class ActiveLockouts {
  readonly #byLimiter = new Map<string, Map<string, number>>();
  readonly #max: number;

  /** @param maxPerLimiter most subjects kept for one limiter */
  constructor(maxPerLimiter: number) {
    this.#max = maxPerLimiter;
  }

  /** A lockout of `subject` (scope and key, as one string) on `limiter` that ends at `until` started. */
  add(limiter: string, subject: string, until: number, now: number): void {
    let inForce = this.#byLimiter.get(limiter);
    if (inForce === undefined) {
      inForce = new Map();
      this.#byLimiter.set(limiter, inForce);
    }
    // Re-inserted: the order of the map is the order lockouts started in.
    inForce.delete(subject);
    if (until <= now) return;
    if (inForce.size >= this.#max) {
      prune(inForce, now);
      if (inForce.size >= this.#max) inForce.delete(inForce.keys().next().value as string);
    }
    inForce.set(subject, until);
  }

  /** `limiter` is reported from now on, at 0 until it has lockouts in force. */
  declare(limiter: string): void {
    if (!this.#byLimiter.has(limiter)) this.#byLimiter.set(limiter, new Map());
  }

  /** `subject`'s lockout on `limiter` was lifted early (a reset). */
  remove(limiter: string, subject: string): void {
    this.#byLimiter.get(limiter)?.delete(subject);
  }

  /** Calls `report` with each limiter ever seen and its lockouts in force at `now` (0 included). */
  forEach(now: number, report: (count: number, limiter: string) => void): void {
    for (const [limiter, inForce] of this.#byLimiter) {
      prune(inForce, now);
      report(inForce.size, limiter);
    }
  }
}

/** Drops the lockouts whose end has come. */
function prune(inForce: Map<string, number>, now: number): void {
  for (const [subject, until] of inForce) if (until <= now) inForce.delete(subject);
}
