import { PortcullisConfigError } from '@portcullis/core';
import type { WebSocketServerLike } from './guard-upgrade.js';

function hasMethods(value: unknown, ...names: string[]): boolean {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  return names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function');
}

/**
 * Refuses a `server` or `wss` the guard cannot work with, before anything is attached.
 * @throws {PortcullisConfigError} for a server without the `upgrade` event, a `wss` that is no ws
 *   WebSocketServer, or one not in `noServer` mode
 */
export function checkServers(server: unknown, wss: unknown): void {
  if (!hasMethods(server, 'on', 'off', 'listenerCount')) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_SERVER',
      'server',
      'guardUpgrade: "server" must be an HTTP(S) server (an emitter of "upgrade")',
    );
  }
  if (!hasMethods(wss, 'handleUpgrade', 'emit')) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_WSS',
      'wss',
      'guardUpgrade: "wss" must be a ws WebSocketServer',
    );
  }
  const wssOptions = (wss as WebSocketServerLike<unknown>).options;
  if (wssOptions != null && wssOptions.noServer !== true) {
    throw new PortcullisConfigError(
      'ERR_PORTCULLIS_WSS',
      'wss',
      'guardUpgrade: create the WebSocketServer with { noServer: true }; with "server" or "port" ws answers upgrades itself, around the guard',
    );
  }
}
