-- semaphore_set: the semaphore's administration (Redisson's RSemaphore trySetPermits,
-- addPermits, drainPermits), at most once per request.
-- KEYS[1]  the permit counter
-- KEYS[2]  the channel "redisson_sc:{<name>}"
-- KEYS[3]  this request's latch "rlock_semaphore_latch:{<name>}:<32 hex request id>"
-- ARGV[1]  "init": set the count to ARGV[2] only if the semaphore has none (returns 1 if set,
--          0 if it had one); "add": add ARGV[2] (may be negative) to the count, a missing one
--          counting 0 (returns the new count); "drain": set the count to 0 (returns the count
--          before, a missing one counting 0)
-- ARGV[2]  permits (a whole number; ignored by "drain")
-- ARGV[3]  latch TTL in ms
-- Returns  as above; an attempt after an earlier one of this request ran returns the first
--          one's result. An error reply when the counter holds no integer.
-- "init" and "add" publish the new count on the channel (waiters retry), as Redisson does.
-- A replay (this request's latch found) writes only the latch's TTL (ARGV[3]): its WAIT then
-- covers the first run (config::replica_sync's resends).
local done = redis.call('get', KEYS[3])
if done then
  -- A replay: the latch's TTL is set again, a write, so that a WAIT after it on any connection
  -- covers the first run (the server counts a connection's offset at its last write).
  redis.call('pexpire', KEYS[3], ARGV[3])
  return tonumber(done)
end
local value = redis.call('get', KEYS[1])
local count = 0
if value then
  count = tonumber(value)
  if not count then
    return redis.error_reply('WRONGTYPE semaphore key holds no integer permit count')
  end
end
local result
if ARGV[1] == 'init' then
  if value then
    result = 0
  else
    redis.call('set', KEYS[1], ARGV[2])
    redis.call('publish', KEYS[2], ARGV[2])
    result = 1
  end
elseif ARGV[1] == 'add' then
  result = redis.call('incrby', KEYS[1], ARGV[2])
  redis.call('publish', KEYS[2], result)
else
  redis.call('set', KEYS[1], '0')
  result = count
end
redis.call('set', KEYS[3], result, 'px', ARGV[3])
return result
