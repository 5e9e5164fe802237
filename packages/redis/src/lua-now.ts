/**
 * The Lua lines that set `now`, in ms, for a script whose `ARGV[arg]` carries a test clock's time
 * or `''` for the Redis clock (`TIME`), so that every script reads time the one way.
 */
export function luaNow(arg: number): string {
  return `local now
if ARGV[${arg}] ~= '' then
  now = tonumber(ARGV[${arg}])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end`;
}
