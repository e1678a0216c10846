-- lock_force_unlock: delete a lock whoever holds it, and wake its waiters (§1.4).
-- KEYS[1]  the lock key
-- KEYS[2]  the lock channel
-- ARGV[1]  the unlock message, "0"
-- Returns  1 when a lock existed (and the message was published), 0 otherwise.
if redis.call('del', KEYS[1]) == 1 then
  redis.call('publish', KEYS[2], ARGV[1])
  return 1
end
return 0
