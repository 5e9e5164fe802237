import { ipKey } from '@portcullis/core';

/** Who is calling, as far as the quota is concerned. Every field is optional. */
export interface MethodIdentity {
  /** The authenticated device (paired client) id. Blank or missing → `unknown-device`. */
  readonly deviceId?: string | undefined;
  /**
   * The client's IP address: keyed as core's `ipKey` does (canonical IPv4, IPv6 by its /64 network
   * by default); junk → `unknown-ip`.
   */
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
 * The caller part of a bucket key: `deviceId|clientIp`, with `unknown-device` and `unknown-ip` for
 * missing parts, and `|conn=<connId>` appended only when both are unknown. The IP is keyed like
 * every Portcullis limiter keys it (`ipKey`): IPv4 canonical (`::ffff:10.0.0.1` → `10.0.0.1`),
 * IPv6 by its `/ipv6Subnet` network (`2001:db8:1:2::/64`), the full address when `ipv6Subnet` is
 * false. `|` and `%` inside a part are percent-escaped.
 * @throws {PortcullisConfigError} when there is an IP and `ipv6Subnet` is not an integer 1–128 or false
 */
export function callerKey(
  identity?: MethodIdentity | null,
  ipv6Subnet: number | false = 64,
): string {
  const deviceId = text(identity?.deviceId);
  const rawIp = text(identity?.clientIp);
  const clientIp = rawIp === undefined ? undefined : ipKey(rawIp, ipv6Subnet);
  const key = `${deviceId === undefined ? UNKNOWN_DEVICE : part(deviceId)}|${clientIp ?? UNKNOWN_IP}`;
  if (deviceId !== undefined || clientIp !== undefined) return key;
  const connId = text(identity?.connId);
  return connId === undefined ? key : `${key}|conn=${part(connId)}`;
}

/**
 * The bucket key of one call: `method|deviceId|clientIp`, with `unknown-device` and `unknown-ip`
 * for missing parts, and `|conn=<connId>` appended only when both are unknown (so anonymous
 * connections do not share one bucket). The IP is keyed as core's `ipKey(ip, ipv6Subnet)` keys it:
 * canonical IPv4 (`::FFFF:10.0.0.1` → `10.0.0.1`), IPv6 by its /64 network by default (one device
 * rotating addresses inside its /64 keeps one bucket), the full IPv6 address with
 * `ipv6Subnet: false`. `|` and `%` inside a part are percent-escaped.
 * @param method the method name
 * @param identity who calls
 * @param ipv6Subnet prefix length an IPv6 client is keyed by (1–128), or false for the full address
 * @throws {PortcullisConfigError} when there is an IP and `ipv6Subnet` is not an integer 1–128 or false
 * @example methodQuotaKey('config.patch', { deviceId: 'dev-1', clientIp: '10.0.0.1' }) // 'config.patch|dev-1|10.0.0.1'
 * @example methodQuotaKey('config.patch', { deviceId: 'dev-1', clientIp: '2001:db8:1:2::7' }) // 'config.patch|dev-1|2001:db8:1:2::/64'
 * @example methodQuotaKey('config.patch', { connId: 'c7' }) // 'config.patch|unknown-device|unknown-ip|conn=c7'
 */
export function methodQuotaKey(
  method: string,
  identity?: MethodIdentity | null,
  ipv6Subnet: number | false = 64,
): string {
  return joinKey(method, callerKey(identity, ipv6Subnet));
}

/** `method|<caller key>`, the method escaped like every other part. */
export function joinKey(method: string, caller: string): string {
  return `${part(method)}|${caller}`;
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
