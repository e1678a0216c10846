-- rwlock_force_unlock: delete a read-write lock whoever holds it (Redisson's forceUnlock of
-- either half) and wake its waiters.
-- KEYS[1]  the lock hash
-- KEYS[2]  the channel "redisson_rwlock:{<name>}"
-- Returns  1 when a read-write lock was deleted ("0" published after read mode, "1" after
--          write mode, as Redisson's halves do); 0 when there was none (a hash without "mode"
--          is not a read-write lock and is left as it is). WRONGTYPE for another type.
-- The read holds' timeout keys are left to expire with their leases (Redisson's do the same).
local mode = redis.call('hget', KEYS[1], 'mode')
if not mode then
  return 0
end
redis.call('del', KEYS[1])
if mode == 'read' then
  redis.call('publish', KEYS[2], '0')
else
  redis.call('publish', KEYS[2], '1')
end
return 1
