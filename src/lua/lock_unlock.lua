-- lock_unlock: release one hold of a reentrant lock, idempotently (Redisson RLock, §1.3).
-- KEYS[1]  the lock key
-- KEYS[2]  the lock channel "redisson_lock__channel:{<name>}"
-- KEYS[3]  the unlock latch "redisson_unlock_latch:{<name>}:<32 hex request id>"
-- KEYS[4..] optional: earlier unlock latches of this lock that no attempt can read any more
--          (their unlocks were answered on their only attempt), deleted here
-- ARGV[1]  lease in ms applied when holds remain
-- ARGV[2]  owner field
-- ARGV[3]  latch TTL in ms
-- ARGV[4]  optional: the owner's expected hold count; when given and the owner's count differs,
--          nothing is done and nil is returned (releasing an acquire whose reply was lost)
-- Returns  1: fully released (key deleted, Redisson's unlock message "0" published); 0: still
--          held (count decremented, TTL reset); nil: the owner does not hold the lock. Another
--          attempt of the same unlock (the same latch key) returns the first one's result
--          and changes nothing but the latch's TTL (set again to ARGV[3]: a write, so that a
--          WAIT after it covers the first run, whichever connection either ran on): a resend
--          after a lost reply or to confirm the replicas (config::replica_sync), and also a
--          first attempt that reaches the server after its resend (stalled on a connection the
--          client gave up on), by when the owner may hold the lock again.
local spent_from = 4
local channel, latch = KEYS[2], KEYS[3]
-- The result of an attempt of this unlock that has run, else false.
local latched = redis.call('get', latch)
local quiet = not latched
--!include unlock_prelude.lua
local result
if latched then
  -- A replay: its latch's TTL is set again, a write, so that a WAIT after it on any connection
  -- covers the first run (the server counts a connection's offset at its last write).
  redis.call('pexpire', latch, ARGV[3])
  result = tonumber(latched)
else
  result = release(nil)
end
if not spent_deleted and #KEYS >= spent_from then
  redis.call('del', unpack(KEYS, spent_from))
end
return result
