/**
 * @portcullis/ws — gateway auth limiting for `ws` 8 servers: at the HTTP upgrade
 * ({@link guardUpgrade}) or in the first frame ({@link createConnectAuth}). Every decision is the
 * core's; this package only translates it into raw HTTP answers and WebSocket close frames.
 * @packageDocumentation
 */
export {
  type AttemptOptions,
  type ClosableSocket,
  type ConnectAuth,
  type ConnectAuthOptions,
  type ConnectAuthRefusal,
  type ConnectAuthResult,
  type ConnectAuthSuccess,
  createConnectAuth,
} from './connect-auth.js';
export {
  type GuardUpgradeOptions,
  guardUpgrade,
  type UpgradeListener,
  type UpgradeRefusal,
  type UpgradeServer,
  type WebSocketServerLike,
} from './guard-upgrade.js';
