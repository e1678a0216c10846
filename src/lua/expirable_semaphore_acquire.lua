-- expirable_semaphore_acquire: take permits that expire (Redisson's RPermitExpirableSemaphore
-- tryAcquire, protocol reference §9.2), each under an id of its own.
-- KEYS[1]  the permit counter: a string integer (no key: no permits)
-- KEYS[2]  the lease set "{<name>}:timeout": a sorted set of permit id -> expiry (epoch ms)
-- KEYS[3]  the channel "redisson_sc:{<name>}"
-- ARGV[1]  lease in ms, or "-1": the permits never expire (score 922337203685477, Redisson's)
-- ARGV[2..] the ids of the permits to take, 16 random bytes each, made by the client
-- Returns  {1, 0}: taken (now, or by an earlier attempt of this request: its first id is in the
--          set); {0, ms}: too few available, the nearest lease ends in `ms` (a retry then may
--          find it reclaimed); {0, -1}: too few, and none will expire. An error reply when the
--          counter holds no integer (WRONGTYPE).
-- Time is the server's (TIME), not the client's: every client of the set, Java ones included,
-- then compares against one clock, and a client's clock jump changes nothing. (Redisson's
-- scripts take the client's wall clock.) Expired permits (score <= now) are reclaimed first, up
-- to as many as asked for: given back to the counter, and the new count published.
--!include expirable_prelude.lua
local count = #ARGV - 1
if redis.call('zscore', KEYS[2], ARGV[2]) then
  return {1, 0}
end
reclaim(count)
local available = tonumber(value or '0')
if available >= count then
  redis.call('decrby', KEYS[1], count)
  local expiry = nonexpirable
  if tonumber(ARGV[1]) >= 0 then
    expiry = now + tonumber(ARGV[1])
  end
  for i = 2, #ARGV do
    redis.call('zadd', KEYS[2], expiry, ARGV[i])
  end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  return {1, 0}
end
local first = redis.call('zrange', KEYS[2], '0', '0', 'withscores')
if first[2] and tonumber(first[2]) < nonexpirable then
  return {0, math.max(0, tonumber(first[2]) - now)}
end
return {0, -1}
