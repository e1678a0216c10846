-- unlock_prelude: the release that both unlock scripts share, included where a script says
-- `--!include unlock_prelude.lua` (cmake/embed_lua.cmake). The including script has KEYS[1] the
-- lock, KEYS[2] the Redisson channel, KEYS[3] this unlock's latch, and KEYS[spent_from..] the
-- spent latches it deletes; ARGV[1] to ARGV[5] as both scripts document them. Unless the
-- final release took them in its DEL (spent_deleted), the script deletes the spent latches
-- last: after a write (even a DEL) a script's later writes are let past the server's maxmemory
-- check, so a DEL first would let a partial release (HINCRBY, SET) grow a full server's memory.
-- Constants passed to redis.call are strings ('1', not 1): the server formats a number
-- argument with snprintf, a measurable share of a short script's cost.
local spent_deleted = false
-- Releases one hold of the owner ARGV[2]: 0 when holds remain, 1 when it was the last (then,
-- after the lock's DEL and before Redisson's unlock message "0" on KEYS[2], `on_free` runs, if
-- given), nil when the owner holds none or not the ARGV[5] it expects.
local function release(on_free)
  local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
  if count == nil or (ARGV[5] ~= '' and count ~= tonumber(ARGV[5])) then
    return nil
  end
  if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], '-1')
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', KEYS[3], '0', 'px', ARGV[4])
    return 0
  end
  -- The final release deletes first: a server at maxmemory refuses a script whose first write
  -- may grow memory (HINCRBY, HSET, SET), but not DEL, and the writes after it are then allowed.
  -- The lock and the spent latches go in one DEL.
  redis.call('del', KEYS[1], unpack(KEYS, spent_from))
  spent_deleted = true
  if on_free then
    on_free()
  end
  redis.call(ARGV[3], KEYS[2], '0')
  redis.call('set', KEYS[3], '1', 'px', ARGV[4])
  return 1
end
