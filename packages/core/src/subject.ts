import type { ClientInfo } from './client.js';
import { isLoopback } from './ip.js';
import { normalizeOrigin } from './origin.js';

/** The failure-limiter subject of a resolved client. */
export interface AuthSubject {
  /** Canonical IP, `browser-origin:…`, or `unknown`. */
  readonly key: string;
  /** True only for a clean direct-local client when loopback exemption is on. */
  readonly exempt: boolean;
}

/**
 * Turns a resolved client into a failure-limiter subject (docs/design.md#browser-origins, #client-identity). A request with an
 * `Origin` is a browser: never exempt, and from loopback keyed by its normalised origin (each origin
 * its own bucket); otherwise the client IP, exempt only when direct-local. Unresolved → `unknown`.
 */
export function authSubject(
  client: ClientInfo,
  options?: { exemptLoopback?: boolean },
): AuthSubject {
  const exemptLoopback = options?.exemptLoopback ?? true;
  const ip = client.ip;
  if (client.origin !== undefined) {
    if (ip !== undefined && isLoopback(ip))
      return { key: normalizeOrigin(client.origin), exempt: false };
    return { key: ip ?? 'unknown', exempt: false };
  }
  if (ip === undefined) return { key: 'unknown', exempt: false };
  return { key: ip, exempt: exemptLoopback && client.directLocal && isLoopback(ip) };
}
