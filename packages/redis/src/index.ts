/**
 * @portcullis/redis — a Redis store for Portcullis: exact limits shared by every process, one Lua
 * round trip per decision, and a defined answer (`onError`) when Redis is down or slow.
 * @packageDocumentation
 */
export type {
  DurabilityOptions,
  LocalDenyOptions,
  OnError,
  RedisStoreOptions,
  SendCommand,
  Subscribe,
  Unsubscribe,
} from './options.js';
export { RedisStore } from './redis-store.js';
