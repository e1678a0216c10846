-- lock_fence: issue a fencing token to the holder of a lock (Redisson RFencedLock, protocol
-- reference §6), as a step of its own right after the acquire that made the owner the holder.
-- KEYS[1]  the lock key: a hash of owner field -> hold count
-- KEYS[2]  the token counter "redisson_lock_token:{<name>}": a string, no TTL, never deleted
--          (Redisson's layout, shared with Java RFencedLock peers)
-- ARGV[1]  owner field "<client-uuid>:<owner-id>"
-- Returns  the new token (INCR of the counter) when the owner holds the lock; nil otherwise
--          (its hold is gone: expired, deleted, force-unlocked), and then nothing is changed.
-- Every token is issued while its owner holds the lock, so it is greater than every token
-- issued to an earlier holder, by this script or by a Java peer's acquire. Running it twice
-- for one hold (a resend after a lost reply) issues two tokens of the same tenure; the caller
-- gets the later one, and the order between holders is kept.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  return redis.call('incr', KEYS[2])
end
return nil
