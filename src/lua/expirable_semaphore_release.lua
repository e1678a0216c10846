-- expirable_semaphore_release: give back permits by id (Redisson's RPermitExpirableSemaphore
-- tryRelease, §9.3), at most once per request; also the undo of an acquire whose reply was lost.
-- KEYS[1]  the permit counter
-- KEYS[2]  the lease set "{<name>}:timeout"
-- KEYS[3]  the channel "redisson_sc:{<name>}"
-- KEYS[4]  this request's latch "rlock_semaphore_latch:{<name>}:<32 hex request id>"
-- ARGV[1]  latch TTL in ms
-- ARGV[2]  "all": release every id or none (a release); "any": release those present (an undo)
-- ARGV[3..] the permit ids (16 bytes each)
-- Returns  1: released, every lease still running; 0: released, but a lease had run out (the
--          permit was the holder's no more: another client could have reclaimed it and taken
--          it); -1: not released, an id is not in the set (released before, reclaimed after its
--          lease, or never taken). An "any" undo returns the number of ids it released. An
--          attempt after an earlier one of this request ran returns the first one's result.
-- The new count is published on the channel, where waiters (Java ones too) retry.
-- A replay (this request's latch found) writes only the latch's TTL (ARGV[1]): its WAIT then
-- covers the first run (config::replica_sync's resends).
local done = redis.call('get', KEYS[4])
if done then
  -- A replay: the latch's TTL is set again, a write, so that a WAIT after it on any connection
  -- covers the first run (the server counts a connection's offset at its last write).
  redis.call('pexpire', KEYS[4], ARGV[1])
  return tonumber(done)
end
--!include expirable_prelude.lua
local present = {}
local lapsed = false
for i = 3, #ARGV do
  local score = redis.call('zscore', KEYS[2], ARGV[i])
  if score then
    present[#present + 1] = ARGV[i]
    if tonumber(score) <= now then
      lapsed = true
    end
  elseif ARGV[2] == 'all' then
    redis.call('set', KEYS[4], '-1', 'px', ARGV[1])
    return -1
  end
end
local result = 1
if lapsed then
  result = 0
end
if ARGV[2] == 'any' then
  result = #present
end
if #present > 0 then
  redis.call('zrem', KEYS[2], unpack(present))
  local now_available = redis.call('incrby', KEYS[1], #present)
  redis.call('publish', KEYS[3], now_available)
end
redis.call('set', KEYS[4], result, 'px', ARGV[1])
return result
