import type { Logger } from '../events.js';
import { tell } from '../safe-call.js';
import { silenced, type WarningCode, type Warnings } from '../warnings.js';

/**
 * A misconfiguration warning told at most once per middleware, and never when `warnings`
 * switched its code off: the operator needs telling once, not once a request.
 */
export function warnOnce(
  logger: Logger | undefined,
  warnings: Warnings | undefined,
  fields: { readonly code: WarningCode } & Record<string, unknown>,
  message: string,
): () => void {
  let warned = silenced(warnings, fields.code);
  return () => {
    if (warned) return;
    warned = true;
    tell(logger, 'warn', fields, message);
  };
}
