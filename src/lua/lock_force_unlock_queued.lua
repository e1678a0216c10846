-- lock_force_unlock_queued: delete a lock whoever holds it and hand it to the first live waiter
-- of rlock's queue, if any; wake Redisson's waiters either way (§1.4 with the queued hand-off).
-- KEYS[1]  the lock key
-- KEYS[2]  the lock channel "redisson_lock__channel:{<name>}"
-- KEYS[3]  the wait queue "rlock_queue:{<name>}"; the waiters' liveness and the hand-off
--          channels are named after it (queue_prelude's queue_sibling)
-- ARGV[1]  the unlock message, "0"
-- Returns  1 when a lock existed (and the message was published), 0 otherwise.
-- Queued waiters behind an rlock holder listen only on their process's hand-off channel, so a
-- forced unlock hands over like an unlock does: the first live waiter is made owner (with its own
-- lease, at most until its queue deadline) and told with "<owner> <server ms> 1 <its token>", then
-- "0" is published.
local queue_key = KEYS[3]
--!include queue_prelude.lua
if redis.call('del', KEYS[1]) == 0 then
  return 0
end
local head, lease, token = pop_live_head(KEYS[3], live)
if head then
  hand_over(KEYS[1], head, lease, token, '1')
end
redis.call('publish', KEYS[2], ARGV[1])
return 1
