// The first WebSocket frame: `connect` with exactly one credential, checked under the gateway-auth
// lockout by @portcullis/ws' createConnectAuth. Each credential class (shared-secret, password,
// device-token) is its own lockout scope, so a client locked out for guessing the token can still
// use the password; a page (a request with `Origin`) is counted on the browser limiter and is never
// loopback-exempt. Accepted devices get a device token for later connects.
//
// Defence in depth (docs/design.md#defence-in-depth): the shared secret and the password each have
// a scope budget (SCOPE_BUDGET in limits.js: a botnet spreading its guesses over many addresses
// puts the class under attack, and then only clients that logged in before get in); a device
// token names its device, whose id is the account (pair, account and spray layers). The budget is
// an option of the whole connect auth, so there are two, sharing the client limiters: one for the
// two secrets, one for device tokens.
import { isPromise } from '@portcullis/core/adapter';
import { createConnectAuth } from '@portcullis/ws';
import { SCOPE_BUDGET } from './limits.js';
import { invalidRequest, isObject, isRequest, sendError } from './protocol.js';
import { METHODS } from './rpc.js';
import { compareSecret, createDeviceTokens } from './secrets.js';

/** @import { AccessList, AuthOutcome, ClientInfo, FailureLimiter } from '@portcullis/core' */
/** @import { ConnectAuthResult } from '@portcullis/ws' */
/** @import { IncomingMessage } from 'node:http' */
/** @import { WebSocket } from 'ws' */
/** @import { RunningConfig } from './config.js' */
/** @import { JsonLogger } from './logger.js' */
/** @import { StatusBoard } from './status.js' */

/**
 * An authenticated socket, as the RPC methods and the control-plane quota see it.
 * @typedef {object} Connection
 * @property {string} connId
 * @property {string | undefined} deviceId
 * @property {string | undefined} clientIp
 * @property {string} scope the credential class it authenticated with
 */

/**
 * What the socket tells the handshake and is told back.
 * @typedef {object} FirstFrame
 * @property {string} connId
 * @property {ClientInfo} client who is connecting (resolved when the socket opened)
 * @property {(conn: Connection) => void} accept called before hello-ok is sent
 * @property {() => void} refuse called when the socket is refused and closing
 */

/**
 * @param {{
 *   config: RunningConfig,
 *   limiter: FailureLimiter,
 *   browserLimiter: FailureLimiter,
 *   trustedProxies: readonly string[],
 *   logger: JsonLogger,
 *   board: Pick<StatusBoard, 'record' | 'changed' | 'allowed'>,
 *   access?: AccessList,
 * }} options `access`: the operators' allow and deny rules, matched before every credential
 */
export function createConnect(options) {
  const { config, limiter, browserLimiter, trustedProxies, logger, board, access } = options;
  const shared = { limiter, browserLimiter, trustedProxies, logger, ...(access && { access }) };
  // One secret each, named by no account: the client layer and the scope budget.
  const secrets = createConnectAuth({
    ...shared,
    scope: 'shared-secret',
    accountLimits: false,
    scopeBudget: SCOPE_BUDGET,
  });
  // The device id is the account (core's default pair, account and spray limits); no scope
  // budget: a device token is 24 random bytes, and what a botnet could aim at is one device.
  const devices = createConnectAuth({ ...shared, scope: 'device-token' });
  const deviceTokens = createDeviceTokens();

  /**
   * The credential class and the outcome of `connect`'s `params.auth`; for a device token, the
   * account it counts against: the device it belongs to when it is right, else the device the
   * frame names (NO_DEVICE when it names none: a wrong token without an id still has a bucket, so
   * leaving the id out cannot skip the pair and spray layers).
   * @param {unknown} auth
   * @param {string | undefined} askedId `params.device.id`, already validated
   * @returns {{ scope: string, outcome: AuthOutcome, deviceId?: string, account?: string }}
   */
  function credentialsOf(auth, askedId) {
    const a = isObject(auth) ? auth : {};
    const present = (/** @type {string} */ k) => a[k] !== undefined && a[k] !== '';
    const { token, password } = config.current().gateway.auth;
    if (present('token')) {
      const t = a['token'];
      return {
        scope: 'shared-secret',
        outcome: typeof t === 'string' ? compareSecret(t, token) : 'invalid',
      };
    }
    if (present('password')) {
      const p = a['password'];
      return {
        scope: 'password',
        outcome: typeof p === 'string' ? compareSecret(p, password) : 'invalid',
      };
    }
    if (present('deviceToken')) {
      const t = a['deviceToken'];
      const owner = typeof t === 'string' ? deviceTokens.ownerOf(t) : undefined;
      return owner === undefined
        ? { scope: 'device-token', outcome: 'invalid', account: askedId ?? NO_DEVICE }
        : { scope: 'device-token', outcome: 'ok', deviceId: owner, account: owner };
    }
    return { scope: 'shared-secret', outcome: 'missing' };
  }

  /**
   * Answers the first frame with hello-ok or a refusal (then closed with 1008).
   * @param {WebSocket} ws
   * @param {IncomingMessage} req the upgrade request
   * @param {unknown} frame the first frame, parsed
   * @param {FirstFrame} at
   */
  function handshake(ws, req, frame, at) {
    const { connId, client } = at;
    const f = isObject(frame) ? frame : {};
    if (!isRequest(frame) || f['method'] !== 'connect') {
      at.refuse();
      const message =
        'the first frame must be {"type":"req","id":…,"method":"connect","params":{"auth":…}}';
      sendError(ws, f['id'] ?? null, invalidRequest(message).shape);
      ws.close(1008, 'connect required');
      return;
    }
    const params = isObject(f['params']) ? f['params'] : {};
    const device = isObject(params['device']) ? params['device'] : {};
    const askedId = device['id'];
    if (
      askedId !== undefined &&
      (typeof askedId !== 'string' || !/^[\w.:-]{1,128}$/.test(askedId))
    ) {
      at.refuse();
      const message = 'device.id must be 1–128 of letters, digits, _ . : -';
      sendError(ws, f['id'], invalidRequest(message).shape);
      ws.close(1008, 'invalid connect params');
      return;
    }
    const creds = credentialsOf(params['auth'], /** @type {string | undefined} */ (askedId));
    const connectAuth = creds.scope === 'device-token' ? devices : secrets;
    // Synchronous with the memory store, so frames right behind `connect` find it decided.
    const attempt = connectAuth.attempt(req, creds.outcome, {
      scope: creds.scope,
      ...(creds.account !== undefined && { account: creds.account }),
    });
    if (isPromise(attempt))
      attempt.then(decided).catch((error) => {
        // The gate answers a store failure itself; this is a throw on our side of the answer.
        logger.error({ err: error, connId }, 'connect: deciding the attempt failed');
        ws.close(1011, 'internal error');
      });
    else decided(attempt);

    /** @param {ConnectAuthResult} result */
    function decided(result) {
      const limiter = client.origin === undefined ? 'auth' : 'auth-browser';
      // The limiter let the attempt through (right or wrong credentials); missing ones it never sees.
      if (result.ok || result.reason === 'invalid') board.allowed(limiter);
      if (!result.ok) {
        at.refuse();
        if (result.reason === 'rate_limited' && result.decision !== undefined) {
          board.record({
            event: 'refused',
            limiter,
            scope: creds.scope,
            key: result.decision.key,
            reason: result.decision.reason,
            retryAfterMs: result.decision.retryAfterMs,
            detail: refusedDetail(result.decision.layer),
          });
        }
        logger.info(
          {
            event: 'connect.refused',
            connId,
            reason: result.reason,
            scope: creds.scope,
            key: result.decision?.key,
            ...(result.decision?.layer !== undefined && { layer: result.decision.layer }),
          },
          `connect refused (${result.reason})`,
        );
        connectAuth.refuse(ws, result, (error) => ({ type: 'res', id: f['id'], ok: false, error }));
        board.changed();
        return;
      }
      const deviceId = creds.deviceId ?? /** @type {string | undefined} */ (askedId);
      at.accept({ connId, deviceId, clientIp: client.ip, scope: creds.scope });
      // A device token is issued for the shared secret or the password, never for itself.
      const issued =
        deviceId !== undefined && creds.scope !== 'device-token'
          ? deviceTokens.issue(deviceId)
          : undefined;
      const hello = {
        type: 'hello-ok',
        protocol: 1,
        server: { name: config.current().gateway.name },
        connId,
        auth: { scope: creds.scope, exempt: result.decision?.reason === 'exempt' },
        ...(deviceId !== undefined && {
          device: { id: deviceId, ...(issued !== undefined && { token: issued }) },
        }),
        methods: METHODS,
      };
      ws.send(JSON.stringify({ type: 'res', id: f['id'], ok: true, payload: hello }));
      logger.info(
        { event: 'connect.ok', connId, scope: creds.scope, key: result.decision?.key, deviceId },
        'client connected',
      );
      board.changed();
    }
  }

  return {
    /** The connect auth of the shared secret and the password (the client limiters are shared). */
    connectAuth: secrets,
    /** Both connect auths. */
    connectAuths: { secrets, devices },
    /**
     * The defence-in-depth layers' limiters (pair, account, spray, scope): their `lockouts()` list
     * what both connect auths (and the /status bearer check) earned.
     */
    // The scope layer is the secrets', the pair, account and spray layers the devices'.
    layers: [...secrets.layers, ...devices.layers],
    handshake,
    close: () => Promise.all([secrets.close(), devices.close()]),
  };
}

/** The account of a wrong device token whose frame names no device (no device id looks like it). */
export const NO_DEVICE = '(no device id)';

/**
 * What the status board says of a refused connect, by the layer that refused it (only the
 * server's side names the layer: the client gets the same AUTH_RATE_LIMITED from every one).
 * @param {string | undefined} layer
 */
function refusedDetail(layer) {
  if (layer === undefined || layer === 'client' || layer === 'ban')
    return 'connect refused: AUTH_RATE_LIMITED, close 1008';
  const soft = layer === 'account' || layer === 'scope';
  return `connect refused by the ${layer} layer${soft ? ' (under attack, untrusted client)' : ''}: AUTH_RATE_LIMITED, close 1008`;
}
