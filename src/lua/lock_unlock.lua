-- lock_unlock: release one hold of a reentrant lock, idempotently (Redisson RLock, §1.3).
-- KEYS[1]  the lock key
-- KEYS[2]  the lock channel "redisson_lock__channel:{<name>}"
-- KEYS[3]  the unlock latch "redisson_unlock_latch:{<name>}:<32 hex request id>"
-- KEYS[4..] optional: earlier unlock latches of this lock that no attempt can read any more
--          (their unlocks were answered on their only attempt), deleted here
-- ARGV[1]  the unlock message, "0"
-- ARGV[2]  lease in ms applied when holds remain
-- ARGV[3]  owner field
-- ARGV[4]  publish command: "publish" or "spublish"
-- ARGV[5]  latch TTL in ms
-- ARGV[6]  the owner's expected hold count, or "": when given and the owner's count differs,
--          nothing is done and nil is returned (releasing an acquire whose reply was lost)
-- ARGV[7]  "1" when an earlier attempt of this unlock may have run (a resend), else "0": only
--          then can the latch exist (its request id is new with the first attempt), so only then
--          is it read
-- Returns  1: fully released (key deleted, message published); 0: still held (count
--          decremented, TTL reset); nil: the owner does not hold the lock. A resent call (the
--          same latch key, ARGV[7] "1") returns the first call's result without doing anything.
local spent_deleted = false
local function run()
  if ARGV[7] == '1' then
    local done = redis.call('get', KEYS[3])
    if done ~= false then
      return tonumber(done)
    end
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
  -- may grow memory (HINCRBY, SET), but not DEL, and the writes after it are then allowed.
  -- The lock and the spent latches go in one DEL.
  redis.call('del', KEYS[1], unpack(KEYS, 4))
  spent_deleted = true
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return 1
end
local result = run()
-- Otherwise the spent latches go last: after a write (even a DEL) a script's later writes are let
-- past the server's maxmemory check, so a DEL first would let a partial release (HINCRBY, SET)
-- grow a full server's memory.
if not spent_deleted and #KEYS > 3 then
  redis.call('del', unpack(KEYS, 4))
end
return result
