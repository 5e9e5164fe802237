import type { Decision } from '../decision.js';
import type { ErrorShape } from '../error-shapes.js';

/**
 * A framework-neutral HTTP response: adapters write `status`, `headers` and `body` in their idiom
 * and add nothing. Built only here and in the gates, so every framework answers byte for byte alike.
 */
export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** The serialised body (JSON or plain text, as `headers['Content-Type']` says). */
  readonly body: string;
}

/** An answer of one content type: the given headers, then its `Content-Type`. */
function typedAnswer(
  status: number,
  contentType: string,
  body: string,
  headers: Readonly<Record<string, string>>,
): HttpAnswer {
  return { status, headers: { ...headers, 'Content-Type': contentType }, body };
}

/** A JSON answer carrying an error shape. */
export function jsonAnswer(
  status: number,
  shape: ErrorShape,
  headers: Readonly<Record<string, string>> = {},
): HttpAnswer {
  return typedAnswer(status, 'application/json; charset=utf-8', JSON.stringify(shape), headers);
}

/** A plain-text answer (webhooks: no JSON shape). */
export function textAnswer(
  status: number,
  text: string,
  headers: Readonly<Record<string, string>> = {},
): HttpAnswer {
  return typedAnswer(status, 'text/plain; charset=utf-8', text, headers);
}

/**
 * Why a gate refused a request, so that a transport with answers of its own (a WebSocket close
 * frame) need not infer it from the HTTP status:
 * - `missing`: no credentials (an auth gate never counts these);
 * - `invalid`: wrong credentials, counted (the one that starts a lockout included);
 * - `rate_limited`: a lockout in force (HTTP 429);
 * - `unavailable`: the shared store failed and its policy refuses (`onError: 'closed'`, HTTP 503);
 * - `denied`: an operator's deny rule matched (HTTP 403 `ACCESS_DENIED`; docs/design.md#access-lists).
 */
export type RefusalReason = 'missing' | 'invalid' | 'rate_limited' | 'unavailable' | 'denied';

/** What a gate concluded about one request. */
export type GateResult =
  | { readonly ok: true; readonly decision: Decision | undefined }
  | {
      readonly ok: false;
      /** Why it was refused. */
      readonly reason: RefusalReason;
      readonly decision: Decision | undefined;
      readonly answer: HttpAnswer;
      readonly error: ErrorShape | undefined;
    };
