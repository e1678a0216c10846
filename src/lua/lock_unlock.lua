-- lock_unlock: release one hold of a reentrant lock, idempotently (Redisson RLock, §1.3).
-- KEYS[1]  the lock key
-- KEYS[2]  the lock channel "redisson_lock__channel:{<name>}"
-- KEYS[3]  the unlock latch "redisson_unlock_latch:{<name>}:<32 hex request id>"
-- KEYS[4..] optional: earlier unlock latches of this lock that no attempt can read any more
--          (their unlocks were answered on their only attempt), deleted here
-- ARGV[1]  lease in ms applied when holds remain
-- ARGV[2]  owner field
-- ARGV[3]  publish command: "publish" or "spublish"
-- ARGV[4]  latch TTL in ms
-- ARGV[5]  the owner's expected hold count, or "": when given and the owner's count differs,
--          nothing is done and nil is returned (releasing an acquire whose reply was lost)
-- ARGV[6]  "1" when an earlier attempt of this unlock may have run (a resend), else "0": only
--          then can the latch exist (its request id is new with the first attempt), so only then
--          is it read
-- Returns  1: fully released (key deleted, Redisson's unlock message "0" published); 0: still
--          held (count decremented, TTL reset); nil: the owner does not hold the lock. A resent
--          call (the same latch key, ARGV[6] "1") returns the first call's result without doing
--          anything.
local spent_from = 4
--!include unlock_prelude.lua
local result = latched and tonumber(latched) or release(nil)
if not spent_deleted and #KEYS >= spent_from then
  redis.call('del', unpack(KEYS, spent_from))
end
return result
