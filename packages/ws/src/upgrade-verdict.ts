import type { IncomingMessage } from 'node:http';
import {
  type AuthGate,
  type GateResult,
  isPromise,
  type MaybePromise,
} from '@portcullis/core/adapter';
import type { WebSocketServerLike } from './guard-upgrade.js';

/** What becomes of one upgrade request: another listener's, the gate's result, or a failure. */
export type Verdict =
  | { readonly kind: 'elsewhere' }
  | { readonly kind: 'gate'; readonly result: GateResult }
  | { readonly kind: 'error'; readonly error: unknown };

const ELSEWHERE: Verdict = { kind: 'elsewhere' };

const failed = (error: unknown): Verdict => ({ kind: 'error', error });

function afterRouting(
  gate: AuthGate<IncomingMessage>,
  handles: boolean,
  req: IncomingMessage,
): MaybePromise<Verdict> {
  if (!handles) return ELSEWHERE;
  const result = gate.run(req, req);
  return isPromise(result)
    ? result.then((r): Verdict => ({ kind: 'gate', result: r }))
    : { kind: 'gate', result };
}

/**
 * Asks `wss` whether it takes `req` and, if it does, runs the gate: synchronous when both are.
 * Never throws or rejects; a failure of either is an `error` verdict.
 */
export function judgeUpgrade(
  wss: Pick<WebSocketServerLike<unknown>, 'shouldHandle'>,
  gate: AuthGate<IncomingMessage>,
  req: IncomingMessage,
): MaybePromise<Verdict> {
  try {
    const handles = wss.shouldHandle === undefined ? true : wss.shouldHandle(req);
    const verdict = isPromise(handles)
      ? handles.then((yes) => afterRouting(gate, yes, req))
      : afterRouting(gate, handles, req);
    return isPromise(verdict) ? verdict.catch(failed) : verdict;
  } catch (error) {
    return failed(error);
  }
}
