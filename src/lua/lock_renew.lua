-- lock_renew: the watchdog's batched renewal (Redisson LockTask, §2).
-- KEYS[i]    lock key i (1..n)
-- ARGV[1]    lease in ms
-- ARGV[i+1]  owner field expected in KEYS[i]
-- Returns    an array of n integers: 1 when KEYS[i] is still held by its owner (and its TTL
--            was reset to the lease), 0 when the owner field is gone (the lock was lost),
--            also when the key now holds another type (deleted, then re-created as a string,
--            say): one such key must not fail the renewal of the rest of its batch.
local result = {}
for i = 1, #KEYS do
  local ok, held = pcall(redis.call, 'hexists', KEYS[i], ARGV[i + 1])
  if ok and held == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
