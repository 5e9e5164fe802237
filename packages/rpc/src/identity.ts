import { normalizeIp } from '@portcullis/core';

/** Who is calling, as far as the quota is concerned. Every field is optional. */
export interface MethodIdentity {
  /** The authenticated device (paired client) id. Blank or missing → `unknown-device`. */
  readonly deviceId?: string | undefined;
  /** The client's IP address; canonicalised with `normalizeIp`, junk → `unknown-ip`. */
  readonly clientIp?: string | undefined;
  /** The connection id; used only when both the device and the IP are unknown. */
  readonly connId?: string | number | undefined;
}

/** The device part of a key when the caller has no device id. */
export const UNKNOWN_DEVICE = 'unknown-device';
/** The IP part of a key when the caller has no (valid) IP. */
export const UNKNOWN_IP = 'unknown-ip';

/** `|` separates the key's parts; escape it (and `%`) inside a part so parts can never collide. */
function part(value: string): string {
  return /[|%]/.test(value) ? value.replace(/%/g, '%25').replace(/\|/g, '%7C') : value;
}

function text(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/**
 * The bucket key of one call: `method|deviceId|clientIp`, with `unknown-device` and `unknown-ip`
 * for missing parts, and `|conn=<connId>` appended only when both are unknown (so anonymous
 * connections do not share one bucket). The IP is canonical (`::FFFF:10.0.0.1` → `10.0.0.1`);
 * `|` and `%` inside a part are percent-escaped.
 * @example methodQuotaKey('config.patch', { deviceId: 'dev-1', clientIp: '10.0.0.1' }) // 'config.patch|dev-1|10.0.0.1'
 * @example methodQuotaKey('config.patch', { connId: 'c7' }) // 'config.patch|unknown-device|unknown-ip|conn=c7'
 */
export function methodQuotaKey(method: string, identity?: MethodIdentity | null): string {
  const deviceId = text(identity?.deviceId);
  const rawIp = text(identity?.clientIp);
  const clientIp = rawIp === undefined ? undefined : normalizeIp(rawIp);
  const key = `${part(method)}|${deviceId === undefined ? UNKNOWN_DEVICE : part(deviceId)}|${clientIp ?? UNKNOWN_IP}`;
  if (deviceId !== undefined || clientIp !== undefined) return key;
  const connId = text(identity?.connId);
  return connId === undefined ? key : `${key}|conn=${part(connId)}`;
}

/** The default `identity`: reads `deviceId`, `clientIp` and `connId` straight off the context. */
export function contextIdentity(ctx: unknown): MethodIdentity | undefined {
  if (ctx === null || typeof ctx !== 'object') return undefined;
  const c = ctx as Record<string, unknown>;
  return {
    deviceId: c['deviceId'] as string | undefined,
    clientIp: c['clientIp'] as string | undefined,
    connId: c['connId'] as string | number | undefined,
  };
}
