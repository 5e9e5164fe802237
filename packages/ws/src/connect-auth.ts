import {
  type AccessDeniedError,
  type AuthOutcome,
  type AuthRateLimitedError,
  type Decision,
  type ErrorShape,
  type FailureLimiter,
  type FailureLimiterReconfig,
  type MaybePromise,
  PortcullisConfigError,
  type RawRequest,
} from '@portcullis/core';
import {
  type AuthFailedError,
  type AuthGateOptions,
  createAuthGate,
  type GateResult,
  isPromise,
} from '@portcullis/core/adapter';

/**
 * Options of {@link createConnectAuth}: those of gateway auth, without `verify` (your code checks
 * the frame) and `account` (the frame names it: pass it to `attempt`).
 */
export type ConnectAuthOptions = Omit<AuthGateOptions<unknown>, 'verify' | 'account'>;

/** Per-call options of {@link ConnectAuth.attempt}. */
export interface AttemptOptions {
  /** The credential class of this attempt (`shared-secret`, `device-token`, …). @default the `scope` option */
  scope?: string;
  /**
   * The account the frame names (a user name, a device id), for the account limits
   * (docs/design.md#defence-in-depth). Normalise it yourself (Portcullis does not case-fold);
   * over 256 characters, empty or not a string, it shares `account:invalid`.
   */
  account?: string | undefined;
}

/** An accepted first frame. */
export interface ConnectAuthSuccess {
  readonly ok: true;
  /** The limiter's decision after the success was recorded (`reason: 'exempt'` for direct-local clients). */
  readonly decision: Decision | undefined;
}

/** Common fields of a refused first frame. */
interface RefusalBase {
  readonly ok: false;
  /** The close reason to send with `closeCode` (the error's message, well under 123 bytes). */
  readonly closeReason: string;
  /** The limiter's decision; `undefined` for missing credentials, which are never checked. */
  readonly decision: Decision | undefined;
}

/**
 * A refused first frame: send `error` (as is, or inside your protocol's envelope) and close with
 * `closeCode` — {@link ConnectAuth.refuse} does both.
 * - `rate_limited`: a lockout is in force; `error` is exactly `authRateLimitedError(retryAfterMs)`.
 * - `invalid` / `missing`: wrong or absent credentials; `error` is `authFailedError(reason)`.
 *   Only `invalid` counts towards a lockout; the attempt that starts one still gets `invalid`.
 * - `denied`: an operator's deny rule matched (docs/design.md#access-lists); `error` is
 *   `accessDeniedError(reason)`, the close reason its message cut to the 123 bytes a frame allows.
 * - `unavailable`: the shared store failed and its policy is to refuse (`onError: 'closed'`);
 *   closed with 1013 (try again later) since the client did nothing wrong.
 */
export type ConnectAuthRefusal =
  | (RefusalBase & {
      readonly reason: 'rate_limited';
      readonly error: AuthRateLimitedError;
      readonly closeCode: 1008;
    })
  | (RefusalBase & {
      readonly reason: 'invalid' | 'missing';
      readonly error: AuthFailedError;
      readonly closeCode: 1008;
    })
  | (RefusalBase & {
      readonly reason: 'unavailable';
      readonly error: ErrorShape;
      readonly closeCode: 1013;
    })
  | (RefusalBase & {
      readonly reason: 'denied';
      readonly error: AccessDeniedError;
      readonly closeCode: 1008;
    });

/** What {@link ConnectAuth.attempt} concluded. */
export type ConnectAuthResult = ConnectAuthSuccess | ConnectAuthRefusal;

/** The part of a WebSocket {@link ConnectAuth.refuse} uses (a `ws` 8 `WebSocket` fits). */
export interface ClosableSocket {
  /** `0` connecting, `1` open, `2` closing, `3` closed. */
  readonly readyState: number;
  /** Sends a text frame. */
  send(data: string): void;
  /** Starts the closing handshake. */
  close(code?: number, reason?: string): void;
}

/** First-frame authentication with the gateway lockout; see {@link createConnectAuth}. */
export interface ConnectAuth {
  /**
   * Runs the lockout sequence for the outcome your code found in the first frame: the limiter is
   * checked first (so a locked-out client is refused even with the right credentials), a wrong
   * credential is counted, a right one resets the scope for that client, missing ones are neither
   * checked nor counted. Synchronous with the in-memory store; a promise with an async one.
   * @param req the upgrade request (`IncomingMessage`, the second argument of `connection`)
   * @param outcome what the credential check found
   */
  attempt(
    req: RawRequest,
    outcome: AuthOutcome,
    options?: AttemptOptions,
  ): MaybePromise<ConnectAuthResult>;
  /**
   * Sends the refusal's error as a JSON text frame — or `frame(error, refusal)`, JSON-encoded, to
   * wrap it in your protocol's envelope — then closes with `closeCode` and `closeReason`. A socket
   * that is already closing gets no frame.
   */
  refuse(
    ws: ClosableSocket,
    refusal: ConnectAuthRefusal,
    frame?: (error: ErrorShape, refusal: ConnectAuthRefusal) => unknown,
  ): void;
  /** The limiter for non-browser clients (reset a client with `limiter.reset(ip, scope)`). */
  readonly limiter: FailureLimiter;
  /** The limiter for browser clients (requests with `Origin`). */
  readonly browserLimiter: FailureLimiter;
  /**
   * The defence-in-depth layers' limiters (pair, account, spray, scope; empty when off): their
   * `lockouts()` list each layer's lockouts (docs/design.md#defence-in-depth).
   */
  readonly layers: readonly FailureLimiter[];
  /** Changes the numbers in force without a restart (history and earned lockouts kept). */
  reconfigure(partial: FailureLimiterReconfig): void;
  /** Closes the limiters this instance created (not the ones you passed). */
  close(): MaybePromise<void>;
}

const OPEN = 1;
const CLOSING = 2;

function toResult(result: GateResult): ConnectAuthResult {
  if (result.ok) return { ok: true, decision: result.decision };
  const { decision, reason } = result;
  const error = result.error as ErrorShape;
  switch (reason) {
    case 'rate_limited':
      return {
        ok: false,
        reason,
        error: error as AuthRateLimitedError,
        closeCode: 1008,
        closeReason: error.message,
        decision,
      };
    case 'invalid':
    case 'missing':
      return {
        ok: false,
        reason,
        error: error as AuthFailedError,
        closeCode: 1008,
        closeReason: error.message,
        decision,
      };
    case 'unavailable':
      return { ok: false, reason, error, closeCode: 1013, closeReason: error.message, decision };
    case 'denied':
      return {
        ok: false,
        reason,
        error: error as AccessDeniedError,
        closeCode: 1008,
        closeReason: closeReasonOf(error.message),
        decision,
      };
  }
}

/**
 * Auth limiting for protocols that authenticate in the first WebSocket frame (docs/design.md#gateway-auth, #browser-origins, #adapters).
 * Your code reads the frame and compares the credentials; `attempt` applies the lockout, `refuse`
 * sends the error frame and closes with 1008. Requests with an `Origin` use the browser limiter.
 * @throws {PortcullisConfigError} for a wrong or unknown option (`verify` included)
 * @example
 * const auth = createConnectAuth({ scope: 'shared-secret' });
 * wss.on('connection', (ws, req) => {
 *   ws.once('message', async (data) => {
 *     const result = await auth.attempt(req, checkToken(JSON.parse(String(data)).token));
 *     if (!result.ok) return auth.refuse(ws, result);
 *     serve(ws);
 *   });
 * });
 */
export function createConnectAuth(options?: ConnectAuthOptions): ConnectAuth {
  if (options !== null && typeof options === 'object' && Object.hasOwn(options, 'verify')) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_UNKNOWN_OPTION',
      'verify',
      'createConnectAuth: unknown option "verify" (check the first frame yourself and pass the outcome to attempt())',
    );
  }
  if (options !== null && typeof options === 'object' && Object.hasOwn(options, 'account')) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_UNKNOWN_OPTION',
      'account',
      'createConnectAuth: unknown option "account" (the first frame names the account: pass it to attempt(req, outcome, { account }))',
    );
  }
  // parseOptions accepts `undefined` (all defaults) and rejects anything else that is not an object.
  const gate = createAuthGate<unknown>(options as AuthGateOptions<unknown>, {
    where: 'createConnectAuth',
    needsVerify: false,
    accountPerCall: true,
  });

  return {
    attempt(
      req: RawRequest,
      outcome: AuthOutcome,
      attemptOptions?: AttemptOptions,
    ): MaybePromise<ConnectAuthResult> {
      const result =
        attemptOptions?.account === undefined
          ? gate.decide(req, outcome, attemptOptions?.scope)
          : gate.decide(req, outcome, attemptOptions.scope, attemptOptions.account);
      return isPromise(result) ? result.then(toResult) : toResult(result);
    },
    refuse(
      ws: ClosableSocket,
      refusal: ConnectAuthRefusal,
      frame?: (error: ErrorShape, refusal: ConnectAuthRefusal) => unknown,
    ): void {
      if (refusal?.ok !== false)
        throw new TypeError('Portcullis: refuse() takes a refusal (a result with ok: false)');
      if (ws.readyState >= CLOSING) return;
      if (ws.readyState === OPEN)
        ws.send(
          JSON.stringify(frame === undefined ? refusal.error : frame(refusal.error, refusal)),
        );
      ws.close(refusal.closeCode, refusal.closeReason);
    },
    limiter: gate.limiter,
    browserLimiter: gate.browserLimiter,
    layers: gate.layers,
    reconfigure: gate.reconfigure,
    close: gate.close,
  };
}

/** A close frame's reason holds at most 123 bytes of UTF-8: a longer message is cut, whole characters only. */
function closeReasonOf(message: string): string {
  if (Buffer.byteLength(message) <= 123) return message;
  let out = '';
  let bytes = 0;
  for (const ch of message) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > 120) break;
    out += ch;
    bytes += n;
  }
  return `${out}...`;
}
