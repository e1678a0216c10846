-- rwlock_unlock: release one read or write hold of an owner (Redisson's RReadWriteLock unlock,
-- protocol reference §4.3 and §4.5), at most once per request; or undo an acquire whose
-- outcome the client does not know.
-- KEYS[1]  the lock hash (rwlock_acquire.lua)
-- KEYS[2]  the channel "redisson_rwlock:{<name>}"
-- KEYS[3]  this request's unlock latch "redisson_unlock_latch:{<name>}:<32 hex request id>"
-- KEYS[4]  the timeout key prefix (rwlock_acquire.lua)
-- KEYS[5]  optional: the latch of an acquire (rwlock_acquire.lua) whose reply was lost. One hold
--          is released only if that acquire took it (its latch is there), and its latch is
--          deleted, so that a late attempt of it finds nothing and takes nothing more.
-- ARGV[1]  'read' or 'write'
-- ARGV[2]  the owner field "<client uuid>:<owner id>"
-- ARGV[3]  lease in ms: the TTL a write unlock leaves when the owner still holds the write half
-- ARGV[4]  latch TTL in ms
-- Returns  1: released, and the lock is gone (deleted, "0" after a read release or "1" after a
--          write release published on the channel, as Redisson does); 0: released, the lock
--          remains (other holds); -1: the owner held no such hold, or the undone acquire took
--          nothing; nothing changed. A resent attempt returns the first attempt's result and
--          changes nothing but the latch's TTL (set again: a write, so that a WAIT after it
--          covers the first run, whichever connection either ran on).
-- After the last write hold of an owner that also reads (a downgrade) the lock stays in read
-- mode; rlock publishes "1" then too (Redisson does not), so that waiting readers join at once.
-- A read release that leaves only holds whose timeout keys have all expired (their holders
-- stopped renewing) deletes the lock, as Redisson does.
--!include rwlock_prelude.lua
local done = redis.call('get', KEYS[3])
if done then
  -- A replay: its latch's TTL is set again, a write, so that a WAIT after it on any connection
  -- covers the first run (the server counts a connection's offset at its last write).
  redis.call('pexpire', KEYS[3], ARGV[4])
  return tonumber(done)
end
local function finish(result)
  redis.call('set', KEYS[3], result, 'px', ARGV[4])
  return result
end
local mode = redis.call('hget', KEYS[1], 'mode')
local field = ARGV[2]
if ARGV[1] == 'write' then
  field = field .. ':write'
end
if mode == false or (ARGV[1] == 'write' and mode ~= 'write')
    or redis.call('hexists', KEYS[1], field) == 0 then
  return finish(-1)
end
if KEYS[5] and redis.call('del', KEYS[5]) == 0 then
  return finish(-1)
end
local left = redis.call('hincrby', KEYS[1], field, -1)
if left <= 0 then
  redis.call('hdel', KEYS[1], field)
end
if ARGV[1] == 'write' then
  if left > 0 then
    redis.call('pexpire', KEYS[1], ARGV[3])
    return finish(0)
  end
  redis.call('publish', KEYS[2], '1')
  if redis.call('hlen', KEYS[1]) <= 1 then
    redis.call('del', KEYS[1])
    return finish(1)
  end
  redis.call('hset', KEYS[1], 'mode', 'read')
  return finish(0)
end
redis.call('del', rw_timeout_key(KEYS[4], field, left + 1))
if mode == 'write' then
  -- A read hold of the write holder (a downgrade): the write hold keeps the lock and its TTL.
  return finish(0)
end
if redis.call('hlen', KEYS[1]) > 1 then
  local longest = -3
  for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
    local n = tonumber(redis.call('hget', KEYS[1], f))
    if n then
      for i = n, 1, -1 do
        longest = math.max(longest, redis.call('pttl', rw_timeout_key(KEYS[4], f, i)))
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    return finish(0)
  end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], '0')
return finish(1)
