/**
 * @portcullis/redis — a Redis store for Portcullis: exact limits shared by every process, one Lua
 * round trip per decision, and a defined answer (`onError`) when Redis is down or slow.
 * @packageDocumentation
 */
export {
  type DurabilityOptions,
  type LocalDenyOptions,
  type OnError,
  RedisStore,
  type RedisStoreOptions,
  type SendCommand,
  type Subscribe,
  type Unsubscribe,
} from './redis-store.js';
