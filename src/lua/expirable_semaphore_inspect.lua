-- expirable_semaphore_inspect: reclaim expired permits, then read (Redisson's
-- RPermitExpirableSemaphore availablePermits, acquiredPermits, updateLeaseTime,
-- getLeaseTime, §9.4).
-- KEYS[1]  the permit counter
-- KEYS[2]  the lease set "{<name>}:timeout"
-- KEYS[3]  the channel "redisson_sc:{<name>}"
-- ARGV[1]  "available": the permits available; "acquired": the permits taken and not expired;
--          "permits": both together (Redisson's getPermits); "set": make both together ARGV[3]
--          (Redisson's setPermits: the counter becomes ARGV[3] minus the permits taken, and
--          ARGV[3] is published if that changed anything or the counter was missing; returns
--          the counter); "lease": the ms left of permit ARGV[2]'s lease (-1: it never expires;
--          -2: no such permit, or its lease ran out); "update": set permit ARGV[2]'s lease to
--          ARGV[3] ms from now (-1: never expires) if it is held and not expired (1 if so,
--          else 0)
-- ARGV[2]  a permit id (16 bytes), for "lease" and "update"
-- ARGV[3]  the new lease in ms, for "update"; the permits in all (0 or more), for "set"
-- Returns  as above. Every kind first reclaims up to 1000 expired permits (given back to the
--          counter, the new count published), on the server's clock (TIME). An error reply when
--          the counter holds no integer (WRONGTYPE).
-- Safe to run twice: a second "update" sets the same lease from a later now; a second "set"
-- finds the total it set (acquires and releases move permits between the counter and the lease
-- set, leaving the total as it was).
--!include expirable_prelude.lua
reclaim('1000')
if ARGV[1] == 'available' then
  return tonumber(value or '0')
end
if ARGV[1] == 'acquired' then
  return redis.call('zcard', KEYS[2])
end
if ARGV[1] == 'permits' then
  return tonumber(value or '0') + redis.call('zcard', KEYS[2])
end
if ARGV[1] == 'set' then
  local acquired = redis.call('zcard', KEYS[2])
  local wanted = tonumber(ARGV[3])
  local count = tonumber(value or '0')
  if value and count + acquired == wanted then
    return count
  end
  -- INCRBY, not SET: a TTL the counter has stays (a missing counter counts 0).
  redis.call('incrby', KEYS[1], wanted - acquired - count)
  redis.call('publish', KEYS[3], ARGV[3])
  return wanted - acquired
end
local score = redis.call('zscore', KEYS[2], ARGV[2])
if ARGV[1] == 'lease' then
  if not score then
    return -2
  end
  if tonumber(score) >= nonexpirable then
    return -1
  end
  return tonumber(score) - now
end
if not score then
  return 0
end
local expiry = nonexpirable
if tonumber(ARGV[3]) >= 0 then
  expiry = now + tonumber(ARGV[3])
end
redis.call('zadd', KEYS[2], 'xx', expiry, ARGV[2])
return 1
