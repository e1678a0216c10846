-- lock_unlock_queued: release one hold and hand the lock to the first live waiter, if any
-- (rlock's queued hand-off); idempotent through Redisson's unlock latch.
-- KEYS[1]  the lock key
-- KEYS[2]  the Redisson channel "redisson_lock__channel:{<name>}"
-- KEYS[3]  the unlock latch "redisson_unlock_latch:{<name>}:<32 hex request id>"
-- KEYS[4]  the wait queue "rlock_queue:{<name>}"
-- KEYS[5]  the waiters' liveness "rlock_queue_live:{<name>}"
-- KEYS[6]  the hand-off channels' prefix "rlock_handoff:{<name>}"
-- KEYS[7..] optional: earlier unlock latches of this lock that no attempt can read any more
--          (their unlocks were answered on their only attempt), deleted here
-- ARGV[1]  the unlock message, "0"
-- ARGV[2]  lease in ms applied when holds remain
-- ARGV[3]  owner field
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5]  latch TTL in ms
-- ARGV[6]  the owner's expected hold count, or "": when given and different, nothing is
--          released (a waiter leaving the queue after its wait ended, in case it was handed
--          the lock meanwhile)
-- ARGV[7]  "1" when an earlier attempt of this unlock may have run (a resend), else "0": only
--          then can the latch exist (its request id is new with the first attempt), so only then
--          is it read
-- Returns  1: released (handed over, or deleted); 0: still held; nil: not held by the owner.
--          The owner's queue entry, if any, is removed in every case.
-- On the final release the lock goes to the first live waiter (made owner with its own lease,
-- at most until its queue deadline, told on its process's channel "<KEYS[6]>:<client uuid>"
-- with "<owner> <server ms> 1 <its token>", the 1 saying that a "0" on the Redisson channel
-- follows), or is deleted. "0" is published on the Redisson channel either way, after the
-- hand-off message, so Java waiters behave as before.
local spent_deleted = false
local function run()
  if ARGV[7] == '1' then
    local done = redis.call('get', KEYS[3])
    if done ~= false then
      return tonumber(done)
    end
  end
  --!include queue_prelude.lua

  -- Without a queue (the uncontended case) none of the queue's bookkeeping runs. An owner that
  -- was not queued (the usual case: a holder) leaves the queue as it was.
  local queued = redis.call('exists', KEYS[4]) == 1
  if queued and leave(KEYS[4], KEYS[5], ARGV[3]) then
    queued = tidy(KEYS[4], KEYS[5])
  end
  local count = tonumber(redis.call('hget', KEYS[1], ARGV[3]))
  if count == nil then
    return nil
  end
  if ARGV[6] ~= '' and count ~= tonumber(ARGV[6]) then
    return nil
  end
  if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[3], -1)
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
  end
  -- The final release deletes first: a server at maxmemory refuses a script whose first write
  -- may grow memory (HINCRBY, HSET, SET), but not DEL, and the writes after it are then allowed.
  -- The lock and the spent latches go in one DEL.
  redis.call('del', KEYS[1], unpack(KEYS, 7))
  spent_deleted = true
  local head, lease, token
  if queued then
    head, lease, token = live_head(KEYS[4], KEYS[5])
  end
  if head then
    hand_over(KEYS[1], KEYS[4], KEYS[5], head, lease, token, ARGV[4], KEYS[6], '1')
    tidy(KEYS[4], KEYS[5])
  end
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return 1
end
local result = run()
-- Otherwise the spent latches go last: after a write (even a DEL) a script's later writes are let
-- past the server's maxmemory check, so a DEL first would let a partial release (HINCRBY, SET)
-- grow a full server's memory.
if not spent_deleted and #KEYS > 6 then
  redis.call('del', unpack(KEYS, 7))
end
return result
