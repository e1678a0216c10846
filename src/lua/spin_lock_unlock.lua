-- spin_lock_unlock: release one hold of a spin lock, idempotently (Redisson's RSpinLock, §5):
-- lock_unlock without the channel. Nothing is published: spin lock waiters poll, and the
-- release of a spin lock is announced to nobody (Redisson's spin lock publishes nothing
-- either, so that many locks cost no pub/sub traffic).
-- KEYS[1]  the lock key
-- KEYS[2]  the unlock latch "redisson_unlock_latch:{<name>}:<32 hex request id>"
-- KEYS[3..] optional: earlier unlock latches of this lock that no attempt can read any more,
--          deleted here (as lock_unlock's KEYS[4..])
-- ARGV[1]  lease in ms applied when holds remain
-- ARGV[2]  owner field
-- ARGV[3]  latch TTL in ms
-- ARGV[4]  optional: the owner's expected hold count (as lock_unlock's)
-- Returns  1: fully released (key deleted); 0: still held (count decremented, TTL reset); nil:
--          the owner does not hold the lock. Another attempt of the same unlock (the same latch
--          key) returns the first one's result and changes nothing but the latch's TTL
--          (lock_unlock.lua).
local spent_from = 3
local channel, latch = false, KEYS[2]
local latched = redis.call('get', latch)
local quiet = not latched
--!include unlock_prelude.lua
local result
if latched then
  redis.call('pexpire', latch, ARGV[3])  -- a replay's write (lock_unlock.lua)
  result = tonumber(latched)
else
  result = release(nil)
end
if not spent_deleted and #KEYS >= spent_from then
  redis.call('del', unpack(KEYS, spent_from))
end
return result
