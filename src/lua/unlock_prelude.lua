-- unlock_prelude: the release that both unlock scripts share, included where a script says
-- `--!include unlock_prelude.lua` (cmake/embed_lua.cmake). The including script has KEYS[1] the
-- lock and KEYS[spent_from..] the spent latches it deletes, ARGV[1] to ARGV[4] as both scripts
-- document them, and defines the locals `channel` (the Redisson channel, or false for a spin
-- lock, whose release publishes nothing), `latch` (this
-- unlock's latch key) and `quiet` (true when no earlier attempt's latch and no queue can change
-- what a release does) before the include. Unless the final release took them in its DEL
-- (spent_deleted), the script deletes the spent latches last: after a write (even a DEL) a
-- script's later writes are let past the server's maxmemory check, so a DEL first would let a
-- partial release (HINCRBY, SET) grow a full server's memory.
-- Messages go out with PUBLISH, which every rlock waiter and Redisson's default (non-sharded)
-- subscriptions hear; the command is not an argument, since each argument costs every call. (In
-- Cluster mode with sharded pub/sub, the client runs a twin of each script that SPUBLISHes.)
-- Constants passed to redis.call are strings ('1', not 1): the server formats a number
-- argument with snprintf, a measurable share of a short script's cost.
-- The uncontended case first: a quiet unlock of a single hold, any count accepted, is released
-- here as straight code, before the closures below are defined. Lua 5.1 builds every `local
-- function` and its upvalues again on each run, which cost that case about 4,800 of its 101,000
-- server instructions per cycle (bench/server_instructions). It does what release(nil) does for
-- a single hold.
if quiet and ARGV[4] == nil and redis.call('hget', KEYS[1], ARGV[2]) == '1' then
  redis.call('del', KEYS[1], unpack(KEYS, spent_from))
  if channel then
    redis.call('publish', channel, '0')
  end
  redis.call('set', latch, '1', 'px', ARGV[3])
  return 1
end
local spent_deleted = false
-- Releases one hold of the owner ARGV[2]: 0 when holds remain, 1 when it was the last (then,
-- after the lock's DEL and before Redisson's unlock message "0" on `channel`, `on_free` runs, if
-- given), nil when the owner holds none or not the ARGV[4] it expects.
local function release(on_free)
  local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
  if count == nil or (ARGV[4] ~= nil and count ~= tonumber(ARGV[4])) then
    return nil
  end
  if count > 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], '-1')
    redis.call('pexpire', KEYS[1], ARGV[1])
    redis.call('set', latch, '0', 'px', ARGV[3])
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
  if channel then
    redis.call('publish', channel, '0')
  end
  redis.call('set', latch, '1', 'px', ARGV[3])
  return 1
end
