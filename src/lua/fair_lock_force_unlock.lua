-- fair_lock_force_unlock: delete a fair lock whoever holds it and tell the queue's head
-- (Redisson's RFairLock forceUnlock, §3.5).
-- KEYS[1]  the lock key
-- KEYS[2]  the queue "redisson_lock_queue:{<name>}"
-- KEYS[3]  the eviction times "redisson_lock_timeout:{<name>}"
-- KEYS[4]  the channels' base "redisson_lock__channel:{<name>}"
-- Returns  1 when a lock existed (and the head, if any, was told), 0 otherwise.
local fair_queue, fair_timeouts = KEYS[2], KEYS[3]
--!include fair_prelude.lua
fair_purge()
if redis.call('del', KEYS[1]) == 0 then
  return 0
end
fair_notify_head(KEYS[4])
return 1
