-- lock_acquire: take or re-enter a reentrant lock (Redisson RLock, protocol reference §1.2).
-- KEYS[1]  the lock key: a hash of owner field -> hold count
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
-- Returns  nil when acquired: the hold count is incremented and the key's TTL is set to the
--          lease (also on re-entry); otherwise the key's PTTL in ms (-1: the key has no TTL).
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
