import type { Decision } from '@portcullis/core';
import type { Request } from 'express';

const decisions = new WeakMap<object, Decision>();
const prepared = new WeakSet<object>();

/**
 * Makes `req.rateLimit` read the decision of this request. Adding a property to an Express
 * request after it was built changes the object's hidden class, which costs Express's own property
 * reads for the rest of the request (bench/NOTES.md measures about 6 % of a hello-world's server
 * CPU). So the app's request prototype gets one `rateLimit` accessor, backed by a WeakMap, and the
 * request objects keep their shape. A handler that assigns `req.rateLimit` itself still can.
 *
 * Only a real Express request prototype (`app.request`, which holds `app`) is given the accessor;
 * any other object (a hand-made request in a test) gets a plain property, so no shared prototype
 * such as `Object.prototype` is ever touched.
 */
export function exposeDecision(req: Request, decision: Decision): void {
  const proto: unknown = Object.getPrototypeOf(req);
  if (proto !== null && typeof proto === 'object' && (prepared.has(proto) || prepare(proto))) {
    decisions.set(req, decision);
    return;
  }
  req.rateLimit = decision;
}

function prepare(proto: object): boolean {
  if (!Object.hasOwn(proto, 'app') || Object.hasOwn(proto, 'rateLimit')) return false;
  Object.defineProperty(proto, 'rateLimit', {
    configurable: true,
    enumerable: false,
    get(this: object): Decision | undefined {
      return decisions.get(this);
    },
    set(this: object, value: Decision | undefined) {
      if (value === undefined) decisions.delete(this);
      else decisions.set(this, value);
    },
  });
  prepared.add(proto);
  return true;
}
