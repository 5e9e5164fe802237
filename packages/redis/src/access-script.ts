import { createHash } from 'node:crypto';
import { luaNow } from './lua-now.js';

/**
 * The script behind the access-list methods of `RedisStore`: the rules of one list in one hash,
 * on the Redis clock (`TIME`), so every process reads the same rules and the same ends whatever
 * its own clock says, and a full list refuses a new subject atomically.
 *
 * KEYS[1]  the list, `<prefix>~access:<list>`: a hash of subject → `action \t until \t at \t reason`
 *          (until 0: until removed; a reason holds no control character, so no tab).
 * ARGV[1]  `l` list, `p` put, `d` delete; ARGV[2] now in ms (tests) or '' (TIME).
 * `l`      forgets ended rules; replies `{ now, subject, value, … }`.
 * `p`      ARGV[3] subject, ARGV[4] action, ARGV[5] reason, ARGV[6] ms (0: until removed),
 *          ARGV[7] maxRules. Ended rules go first; a new subject beyond maxRules replies 0, else 1.
 * `d`      ARGV[3] subject: replies 1 when a rule in force was removed, else 0.
 */
export const ACCESS_SCRIPT = `
local key, op = KEYS[1], ARGV[1]
${luaNow(2)}
local function ended(value)
  local ends = tonumber(string.match(value, '^[^\\t]*\\t([^\\t]*)'))
  return ends == nil or (ends ~= 0 and ends <= now)
end
local function prune()
  local all = redis.call('HGETALL', key)
  local live = {}
  for i = 1, #all, 2 do
    if ended(all[i + 1]) then redis.call('HDEL', key, all[i])
    else live[#live + 1] = all[i]; live[#live + 1] = all[i + 1] end
  end
  return live
end
if op == 'l' then
  local live = prune()
  table.insert(live, 1, now)
  return live
end
if op == 'd' then
  local value = redis.call('HGET', key, ARGV[3])
  if not value then return 0 end
  redis.call('HDEL', key, ARGV[3])
  if ended(value) then return 0 end
  return 1
end
local live = prune()
local ms = tonumber(ARGV[6])
if redis.call('HEXISTS', key, ARGV[3]) == 0 and #live / 2 >= tonumber(ARGV[7]) then return 0 end
local ends = 0
if ms > 0 then ends = now + ms end
redis.call('HSET', key, ARGV[3], ARGV[4] .. '\\t' .. ends .. '\\t' .. now .. '\\t' .. ARGV[5])
return 1
`;

/** SHA1 of {@link ACCESS_SCRIPT}, for `EVALSHA`. */
export const ACCESS_SCRIPT_SHA = createHash('sha1').update(ACCESS_SCRIPT).digest('hex');

/** The hash of access list `list`. */
export function accessKey(prefix: string, list: string): string {
  return `${prefix}~access:${list}`;
}
