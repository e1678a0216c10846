-- semaphore_release: give permits back and tell the waiters (Redisson's RSemaphore release),
-- at most once per request; or undo an acquire whose outcome the client does not know.
-- KEYS[1]  the permit counter
-- KEYS[2]  the channel "redisson_sc:{<name>}"
-- KEYS[3]  this request's latch "rlock_semaphore_latch:{<name>}:<32 hex request id>"
-- KEYS[4]  optional: the latch of an acquire (semaphore_acquire.lua) whose reply was lost. The
--          permits are given back only if that acquire took them (its latch is there), and its
--          latch is deleted, so that a late attempt of it finds nothing and takes nothing more.
--          (A late attempt that runs after this undo can still take permits: the client closes
--          the connections it may run on before sending the undo, server_client.hpp.)
-- ARGV[1]  permits to give back, a whole number >= 1
-- ARGV[2]  latch TTL in ms
-- Returns  the number of permits available after the release (that of the first attempt when
--          an earlier attempt of this request ran); -1 for an undo whose acquire took nothing.
--          An error reply when the counter holds no integer.
-- The new count is published on the channel, as Redisson does: its waiters and rlock's retry.
-- A replay (this request's latch found) writes only the latch's TTL (ARGV[2]): its WAIT then
-- covers the first run (config::replica_sync's resends).
local done = redis.call('get', KEYS[3])
if done then
  -- A replay: the latch's TTL is set again, a write, so that a WAIT after it on any connection
  -- covers the first run (the server counts a connection's offset at its last write).
  redis.call('pexpire', KEYS[3], ARGV[2])
  return tonumber(done)
end
local value = redis.call('get', KEYS[1])
if value and not tonumber(value) then
  return redis.error_reply('WRONGTYPE semaphore key holds no integer permit count')
end
if KEYS[4] then
  if redis.call('del', KEYS[4]) == 0 then
    redis.call('set', KEYS[3], '-1', 'px', ARGV[2])
    return -1
  end
end
local now = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], now)
redis.call('set', KEYS[3], now, 'px', ARGV[2])
return now
