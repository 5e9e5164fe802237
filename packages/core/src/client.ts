import { safeLogger, tell } from './safe-call.js';
import type { Logger } from './events.js';
import {
  type Cidr,
  cidrContains,
  formatIp,
  type ParsedIp,
  parseCidr,
  parseHeaderAddress,
  parseIp,
  parsedIsLoopback,
} from './ip.js';
import { boolean, parseOptions, withMethods } from './options.js';
import { silenced, type Warnings, warningsOption } from './warnings.js';

/** The part of a Node `IncomingMessage` Portcullis reads. Frameworks' own `ip` fields are never used. */
export interface RawRequest {
  readonly socket?: { readonly remoteAddress?: string | undefined } | null | undefined;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly rawHeaders?: readonly string[] | undefined;
}

/** Who sent a request, as far as can be proven. */
export interface ClientInfo {
  /** Canonical client IP; `undefined` when it cannot be established (such clients share `unknown`). */
  readonly ip: string | undefined;
  /**
   * A loopback peer that is not a trusted proxy and sent no forwarding headers, no `Origin` and no
   * `Sec-Fetch-Site` (that is, not a browser).
   */
  readonly directLocal: boolean;
  /** The request arrived through a trusted proxy. */
  readonly proxied: boolean;
  /**
   * The raw `Origin` header (comma-joined when repeated). `'null'`, an opaque origin, for a browser
   * request that sent none: one carrying `Sec-Fetch-Site` (a `<script>`, `<img>` or other no-cors
   * request, a same-origin GET, a navigation). `undefined` for a request that is no browser's.
   */
  readonly origin: string | undefined;
}

/** Options of {@link resolveClient} and {@link createClientResolver}. */
export interface ClientOptions {
  /**
   * Proxies whose `X-Forwarded-For` is believed: exact IPs or CIDRs. `true`, hop counts and
   * zero-length prefixes (`0.0.0.0/0`) are refused: trust is given to named machines only.
   * @default []
   */
  trustedProxies?: readonly string[];
  /** Use `X-Real-IP` from a trusted proxy that sent no `X-Forwarded-For`. @default false */
  allowRealIpFallback?: boolean;
  /** Receives the one-time warning about an untrusted loopback peer sending forwarding headers. */
  logger?: Pick<Logger, 'warn'>;
  /**
   * Warnings switched off, by code: `PORTCULLIS_UNTRUSTED_FORWARDED`,
   * `PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY` (`{ PORTCULLIS_UNTRUSTED_FORWARDED: false }`).
   * @default every warning on
   */
  warnings?: Warnings;
}

/** Parses and validates `trustedProxies`; shared by every adapter's option parsing. */
export function parseTrustedProxies(
  value: unknown,
  fail: (expected: string) => never,
): readonly Cidr[] {
  const expected = 'an array of IP addresses or CIDR ranges (not true, a hop count or 0.0.0.0/0)';
  if (!Array.isArray(value)) return fail(expected);
  return value.map(
    (entry) => (typeof entry === 'string' ? parseCidr(entry.trim()) : undefined) ?? fail(expected),
  );
}

const clientSpec = {
  trustedProxies: parseTrustedProxies,
  allowRealIpFallback: boolean,
  logger: withMethods<Pick<Logger, 'warn'>>('warn'),
  warnings: warningsOption,
};

/** A compiled client resolver: call it once per request. */
export type ClientResolver = (request: RawRequest) => ClientInfo;

function headerLines(request: RawRequest, name: string): string[] {
  const raw = request.rawHeaders;
  if (raw !== undefined) {
    const lines: string[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      if ((raw[i] as string).length === name.length && (raw[i] as string).toLowerCase() === name)
        lines.push(raw[i + 1] as string);
    }
    return lines;
  }
  const value = request.headers[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

function hasForwardingHeaders(headers: RawRequest['headers']): boolean {
  for (const name in headers) {
    // Every forwarding header starts with "f" or "x": skip the others without lower-casing them.
    const first = name.charCodeAt(0) | 0x20;
    if (first !== 0x66 && first !== 0x78) continue;
    const lower = name.toLowerCase();
    if (lower === 'forwarded' || lower === 'x-real-ip' || lower.startsWith('x-forwarded-'))
      return true;
  }
  return false;
}

function originOf(request: RawRequest): string {
  const value = request.headers.origin as string | string[];
  if (Array.isArray(value)) return value.join(', ');
  // Node joins repeated headers with ", "; a hand-made request may only show them in rawHeaders.
  if (request.rawHeaders !== undefined) {
    const lines = headerLines(request, 'origin');
    if (lines.length > 1) return lines.join(', ');
  }
  return value;
}

/**
 * The origin of a browser request that sent no `Origin`. Browsers withhold `Origin` from no-cors
 * requests (`<script>`, `<img>`), same-origin GETs and navigations, but send `Sec-Fetch-Site` to a
 * loopback or HTTPS server on every request (a header no page can set or remove). Whatever its
 * value, `none` (a URL the user typed, a bookmark, an extension's navigation) included, and a
 * repeated or malformed one too, that header marks a browser: the request is never direct-local and
 * is keyed as an opaque origin, never as a local CLI. A program that sends it only gives up its own
 * exemption. `Sec-Fetch-Mode` alone proves nothing: Node's own `fetch` sends it.
 */
const HIDDEN_ORIGIN = 'null';

function browserOrigin(request: RawRequest, headers: RawRequest['headers']): string | undefined {
  if (headers.origin !== undefined) return originOf(request);
  return headers['sec-fetch-site'] === undefined ? undefined : HIDDEN_ORIGIN;
}

/** A client address, parsed and in canonical text. */
export interface ClientAddress {
  readonly ip: ParsedIp;
  /** `formatIp(ip)`. */
  readonly text: string;
}

/** A socket's peer: its address, computed once per connection. */
interface Peer extends ClientAddress {
  readonly loopback: boolean;
}

/**
 * Parsed peers by address text, shared by every resolver. A keep-alive socket hands back the same
 * address string for each of its requests (a lookup by a string whose hash is already known), and
 * most clients come back on new connections from an address already parsed. Keyed by the text, not
 * by the socket: an entry in a WeakMap keyed by short-lived sockets costs about 0.8 µs to make and
 * collect (measured), which a connection that carries one request (a WebSocket handshake) never
 * earns back.
 *
 * Bounded at {@link MAX_PEERS}. Once full, new addresses are parsed and not kept, and after
 * {@link REFILL_AFTER} of them the cache is emptied and fills again with what comes next: a flood
 * of new clients pays no insert and no delete for most of them (emptying it whenever full cost
 * every one of them a miss, a parse and an insert, and evicting the oldest entry for each new one
 * left the map's chains long enough to slow every miss: bench/NOTES.md), yet what a flood put in
 * first does not hold it for good. The same for every spelling: on a dual-stack server every IPv4
 * client arrives as `::ffff:a.b.c.d`.
 */
const peers = new Map<string, Peer | null>();
const MAX_PEERS = 4096;
const REFILL_AFTER = 16 * MAX_PEERS;
/** New addresses met, and not kept, since the cache was last full. */
let missesWhenFull = 0;

function peerOf(request: RawRequest): Peer | undefined {
  const addr = request.socket?.remoteAddress;
  if (typeof addr !== 'string') return undefined;
  const cached = peers.get(addr);
  if (cached !== undefined) return cached ?? undefined;
  const ip = parseIp(addr);
  const peer =
    ip === undefined ? undefined : { ip, text: formatIp(ip), loopback: parsedIsLoopback(ip) };
  // Only address-sized texts are kept (an IPv6 address with a zone is under 64 characters), so
  // that whatever a caller passes as a socket, the cache stays small.
  if (addr.length <= 64) remember(addr, peer ?? null);
  return peer;
}

/** Caches a new address's peer, within the bound (see {@link peers}). */
function remember(addr: string, peer: Peer | null): void {
  if (peers.size >= MAX_PEERS) {
    if (++missesWhenFull < REFILL_AFTER) return;
    missesWhenFull = 0;
    peers.clear();
  }
  peers.set(addr, peer);
}

/**
 * The parsed-address cache, for tests of its bound: its size, whether it holds an address, and a
 * way to empty it. Not part of the public API.
 * @internal
 */
export const peerCache = {
  size: (): number => peers.size,
  has: (addr: string): boolean => peers.has(addr),
  clear(): void {
    peers.clear();
    missesWhenFull = 0;
  },
};

/**
 * Compiles the client-identity rules (docs/design.md#client-identity) once; the returned function resolves a request.
 * @throws {PortcullisConfigError} for bad `trustedProxies` and other wrong options
 */
export function createClientResolver(options?: ClientOptions): ClientResolver {
  return compileClientRules(options).resolve;
}

/**
 * The compiled rules of {@link createClientResolver}, with a second entry point for hot paths
 * that need only the address: `address(request)` is `resolve(request).ip` (same warning too),
 * parsed and formatted, without building a {@link ClientInfo}. Not part of the public API.
 * @internal
 */
export function compileClientRules(options?: ClientOptions): {
  readonly resolve: ClientResolver;
  readonly address: (request: RawRequest) => ClientAddress | undefined;
} {
  const o = parseOptions(options, clientSpec, 'resolveClient');
  const trusted = o.trustedProxies ?? [];
  const realIpFallback = o.allowRealIpFallback ?? false;
  const logger = safeLogger(o.logger);
  // A warning switched off counts as given already: the hot path tests nothing more.
  let warned = silenced(o.warnings, 'PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY');
  const isTrusted = (ip: ParsedIp) => {
    for (const cidr of trusted) if (cidrContains(cidr, ip)) return true;
    return false;
  };

  function warnSpoof(): void {
    if (warned) return;
    warned = true;
    const msg =
      'Portcullis: a loopback client sent forwarding headers but is not in trustedProxies; it is limited under its own address. ' +
      'If a reverse proxy runs on this host, add its address to trustedProxies.';
    tell(logger, 'warn', { code: 'PORTCULLIS_UNTRUSTED_LOOPBACK_PROXY' }, msg);
  }

  let warnedForwarded = silenced(o.warnings, 'PORTCULLIS_UNTRUSTED_FORWARDED');
  /**
   * `X-Forwarded-For` from a peer that is neither trusted nor loopback: usually a reverse proxy
   * missing from `trustedProxies`, so every user behind it shares the proxy's one bucket.
   */
  function noticeForwarded(headers: RawRequest['headers']): void {
    if (warnedForwarded || headers['x-forwarded-for'] === undefined) return;
    warnedForwarded = true;
    const msg =
      'Portcullis: X-Forwarded-For arrived from a peer that is not in trustedProxies; it is ignored and the peer itself is the client. ' +
      'If this peer is your reverse proxy, every user behind it now shares one bucket: add its address to trustedProxies.';
    tell(logger, 'warn', { code: 'PORTCULLIS_UNTRUSTED_FORWARDED' }, msg);
  }

  // A proxy never forwards for a client on its own loopback interface unless something on that host
  // connected to it; a loopback hop is far more likely written by the client to pass as local.
  // Either way it proves nothing: fail closed (unresolved), never loopback, never a step further left.
  function untrustedHop(ip: ParsedIp): ParsedIp | undefined {
    return parsedIsLoopback(ip) ? undefined : ip;
  }

  function fromForwarded(request: RawRequest): ParsedIp | undefined {
    const lines = headerLines(request, 'x-forwarded-for');
    if (lines.length === 0) {
      if (!realIpFallback) return undefined;
      const real = headerLines(request, 'x-real-ip');
      if (real.length !== 1) return undefined;
      const ip = parseHeaderAddress(real[0] as string);
      return ip !== undefined && !isTrusted(ip) ? untrustedHop(ip) : undefined;
    }
    const hops = lines.join(',').split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const ip = parseHeaderAddress(hops[i] as string);
      if (ip === undefined) return undefined;
      if (!isTrusted(ip)) return untrustedHop(ip);
    }
    return undefined;
  }

  function resolve(request: RawRequest): ClientInfo {
    const headers = request.headers ?? {};
    const origin = browserOrigin(request, headers);
    const peer = peerOf(request);
    if (peer === undefined) return { ip: undefined, directLocal: false, proxied: false, origin };
    if (trusted.length > 0 && isTrusted(peer.ip)) {
      const client = fromForwarded(request);
      return {
        ip: client === undefined ? undefined : formatIp(client),
        directLocal: false,
        proxied: true,
        origin,
      };
    }
    let directLocal = false;
    if (peer.loopback) {
      const forwarded = hasForwardingHeaders(headers);
      if (forwarded) warnSpoof();
      directLocal = !forwarded && origin === undefined;
    } else if (!warnedForwarded) noticeForwarded(headers);
    return { ip: peer.text, directLocal, proxied: false, origin };
  }

  function address(request: RawRequest): ClientAddress | undefined {
    const peer = peerOf(request);
    if (peer === undefined) return undefined;
    if (trusted.length > 0 && isTrusted(peer.ip)) {
      const client = fromForwarded(request);
      return client === undefined ? undefined : { ip: client, text: formatIp(client) };
    }
    // Only the one-time warning depends on the headers here; once given, they need no scan.
    if (peer.loopback) {
      if (!warned && hasForwardingHeaders(request.headers ?? {})) warnSpoof();
    } else if (!warnedForwarded) noticeForwarded(request.headers ?? {});
    return peer;
  }

  return { resolve, address };
}

const resolverCache = new WeakMap<object, ClientResolver>();
let defaultResolver: ClientResolver | undefined;

/**
 * Resolves who sent `request` (docs/design.md#client-identity): an untrusted peer is the client;
 * behind a trusted proxy the right-most untrusted `X-Forwarded-For` hop is, unless it is a loopback
 * address; anything malformed, loopback or all-trusted is unresolved, never the proxy's own address. Prefer {@link createClientResolver} on hot paths.
 */
export function resolveClient(request: RawRequest, options?: ClientOptions): ClientInfo {
  if (options === undefined) {
    defaultResolver ??= createClientResolver();
    return defaultResolver(request);
  }
  let resolver = resolverCache.get(options);
  if (resolver === undefined) {
    resolver = createClientResolver(options);
    resolverCache.set(options, resolver);
  }
  return resolver(request);
}
