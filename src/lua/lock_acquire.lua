-- lock_acquire: take or re-enter a reentrant lock (Redisson RLock, protocol reference §1.2),
-- idempotently when retried.
-- KEYS[1]  the lock key: a hash of owner field -> hold count
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
-- ARGV[3]  optional, only on a retry after a lost reply: the owner's hold count before this
--          acquire. The owner is blocked in this acquire, so nobody else changes its field: a
--          count of ARGV[3] + 1 means the lost attempt was applied, and it is not applied twice.
-- Returns  nil when acquired: the hold count is incremented and the key's TTL is set to the
--          lease (also on re-entry); otherwise the key's PTTL in ms (-1: the key has no TTL; at
--          least 0 for a refused re-entry).
-- A re-entry (ARGV[3] > 0) that finds no hold of its owner is refused, even when the lock is
-- free: the owner's hold is gone (expired, deleted, force-unlocked), and the client must learn
-- that, then acquire afresh. Taken here, the new hold would count 1 on the server and N + 1 in
-- the client, whose inner unlock would then delete the lock under its outer hold.
-- Constants passed to redis.call are strings ('1', not 1): the server formats a number
-- argument with snprintf, a measurable share of a short script's cost.
if ARGV[3] ~= nil then
  local prior = tonumber(ARGV[3])
  local held = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
  if held == prior + 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
  end
  if prior > 0 and held == 0 then
    return math.max(redis.call('pttl', KEYS[1]), 0)
  end
end
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[2], '1')
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
