-- fair_lock_unlock: release one hold of a fair lock and tell only the queue's head (Redisson's
-- RFairLock, §3.4), idempotently through Redisson's unlock latch; also the undo of an acquire
-- that gave up (it leaves the queue).
-- KEYS[1]  the lock key
-- KEYS[2]  the queue "redisson_lock_queue:{<name>}"
-- KEYS[3]  the eviction times "redisson_lock_timeout:{<name>}"
-- KEYS[4]  the channels' base "redisson_lock__channel:{<name>}": each waiter listens on
--          "<base>:<its owner field>"
-- KEYS[5]  the unlock latch "redisson_unlock_latch:{<name>}:<32 hex request id>"
-- KEYS[6..] optional: spent unlock latches of this lock, deleted here (as lock_unlock's)
-- ARGV[1]  lease in ms applied when holds remain
-- ARGV[2]  owner field
-- ARGV[3]  latch TTL in ms
-- ARGV[4]  optional: the owner's expected hold count (nothing is released if it differs)
-- ARGV[5]  optional, with ARGV[4]: the owner's wait time in ms; the owner leaves the queue
--          first (an acquire that gave up: Redisson's acquireFailed), whatever its count
-- Returns  1: fully released (the key deleted, "0" published on the head's channel); 0: still
--          held; nil: the owner does not hold the lock (if the lock is free, the head is told
--          anyway). Another attempt of the same unlock returns the first one's result and
--          changes nothing but the latch's TTL (lock_unlock.lua).
local spent_from = 6
local channel, latch = false, KEYS[5]
local latched = redis.call('get', latch)
local quiet = false
--!include unlock_prelude.lua
local result
if latched then
  redis.call('pexpire', latch, ARGV[3])  -- a replay's write (lock_unlock.lua)
  result = tonumber(latched)
else
  local fair_queue, fair_timeouts = KEYS[2], KEYS[3]
  --!include fair_prelude.lua
  fair_purge()
  if ARGV[5] then
    fair_leave(ARGV[2], ARGV[5])
  end
  if redis.call('exists', KEYS[1]) == 0 then
    fair_notify_head(KEYS[4])
    result = nil
  else
    result = release(function()
      fair_notify_head(KEYS[4])
    end)
  end
end
if not spent_deleted and #KEYS >= spent_from then
  redis.call('del', unpack(KEYS, spent_from))
end
return result
