-- lock_unlock_queued: release one hold and hand the lock to the first live waiter, if any
-- (rlock's queued hand-off); idempotent through Redisson's unlock latch.
-- KEYS[1]  the lock key
-- KEYS[2]  the Redisson channel "redisson_lock__channel:{<name>}"
-- KEYS[3]  the unlock latch "redisson_unlock_latch:{<name>}:<32 hex request id>"
-- KEYS[4]  the wait queue "rlock_queue:{<name>}"; the waiters' liveness and the hand-off
--          channels are named after it (queue_prelude's queue_sibling)
-- KEYS[5..] optional: earlier unlock latches of this lock that no attempt can read any more
--          (their unlocks were answered on their only attempt), deleted here
-- ARGV[1]  lease in ms applied when holds remain
-- ARGV[2]  owner field
-- ARGV[3]  latch TTL in ms
-- ARGV[4]  optional: the owner's expected hold count; when given and different, nothing is
--          released (a waiter leaving the queue after its wait ended, in case it was handed
--          the lock meanwhile)
-- Returns  1: released (handed over, or deleted); 0: still held; nil: not held by the owner.
--          The owner's queue entry, if any, is removed in every case. Another attempt of the
--          same unlock (the same latch key) returns the first one's result and changes nothing
--          but the latch's TTL (lock_unlock.lua): a resend after a lost reply or to confirm the
--          replicas, and also a first attempt that reaches the server after its resend (stalled
--          on a connection the client gave up on), by when the owner may hold the lock again or
--          have handed it to a waiter.
-- On the final release the lock goes to the first live waiter (made owner with its own lease, at
-- most until its queue deadline, told on its process's channel
-- "rlock_handoff:{<name>}:<client uuid>" with "<owner> <server ms> 1 <its token>", the 1 saying
-- that a "0" on the Redisson channel follows), or is deleted. "0" is published on the Redisson
-- channel either way, after the hand-off message, so Java waiters behave as before.
local spent_from = 5
local channel, latch = KEYS[2], KEYS[3]
-- One EXISTS for the queue and this unlock's latch: with neither (the uncontended case) the
-- lock is only released, and none of the queue's helpers is even defined.
local quiet = redis.call('exists', KEYS[4], latch) == 0
--!include unlock_prelude.lua
local function run()
  if quiet then
    return release(nil)
  end
  -- The result of an attempt of this unlock that has run; without one, the queue exists.
  local latched = redis.call('get', latch)
  if latched then
    redis.call('pexpire', latch, ARGV[3])  -- a replay's write (lock_unlock.lua)
    return tonumber(latched)
  end
  local queue_key = KEYS[4]
  --!include queue_prelude.lua

  -- An owner that was not queued (the usual case: a holder) leaves the queue as it was.
  leave(KEYS[4], live, ARGV[2])
  return release(function()
    local head, lease, token = pop_live_head(KEYS[4], live)
    if head then
      hand_over(KEYS[1], head, lease, token, '1')
    end
  end)
end
local result = run()
if not spent_deleted and #KEYS >= spent_from then
  redis.call('del', unpack(KEYS, spent_from))
end
return result
