-- expirable_prelude: what the permit-expirable semaphore's scripts share (Redisson's
-- RPermitExpirableSemaphore, protocol reference §9), included where a script says
-- `--!include expirable_prelude.lua`. The including script has KEYS[1] the permit counter,
-- KEYS[2] the lease set "{<name>}:timeout" and KEYS[3] the channel "redisson_sc:{<name>}".
-- It ends the script with a WRONGTYPE error reply when the counter holds no integer, and defines:
--   nonexpirable  the score of a permit that never expires (Redisson's)
--   value         the counter's value (a string, or false when there is none; after reclaim(),
--                 the new count)
--   now           the server's time in epoch ms (TIME): every client compares against one clock
--   reclaim(n)    gives back up to n expired permits (score <= now) to the counter and publishes
--                 the new count, if positive, for the waiters
local nonexpirable = 922337203685477
local value = redis.call('get', KEYS[1])
if value and not tonumber(value) then
  return redis.error_reply('WRONGTYPE semaphore key holds no integer permit count')
end
local server_time = redis.call('time')
local now = tonumber(server_time[1]) * 1000 + math.floor(tonumber(server_time[2]) / 1000)
local function reclaim(limit)
  local expired = redis.call('zrangebyscore', KEYS[2], '-inf', now, 'limit', '0', limit)
  if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired))
    value = redis.call('incrby', KEYS[1], #expired)
    if value > 0 then
      redis.call('publish', KEYS[3], value)
    end
  end
end
