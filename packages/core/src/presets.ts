/** The production gateway's numbers (docs/design.md#public-names). Frozen: copy and change, never mutate. */
export const presets = Object.freeze({
  /** Gateway auth: 10 failures / 60 s → 5 min lockout, loopback exempt. */
  gatewayAuth: Object.freeze({
    maxAttempts: 10,
    windowMs: 60_000,
    lockoutMs: 300_000,
    exemptLoopback: true,
  }),
  /** Webhook ingress: 20 failures / 60 s → 60 s lockout, no exemption. */
  webhookAuth: Object.freeze({
    maxAttempts: 20,
    windowMs: 60_000,
    lockoutMs: 60_000,
    exemptLoopback: false,
  }),
  /** Control-plane writes: 30 calls / 60 s per method per device + IP. */
  controlPlaneWrites: Object.freeze({ limit: 30, windowMs: 60_000 }),
  /** Session creation: 120 / 10 s per limiter instance. */
  sessionCreation: Object.freeze({ limit: 120, windowMs: 10_000 }),
  /** Restart: at least 30 s between restarts, 2 s default delay, 60 s max delay. */
  restart: Object.freeze({ cooldownMs: 30_000, defaultDelayMs: 2_000, maxDelayMs: 60_000 }),
});
