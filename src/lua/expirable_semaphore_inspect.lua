-- expirable_semaphore_inspect: reclaim expired permits, then read (Redisson's
-- RPermitExpirableSemaphore availablePermits, acquiredPermits, updateLeaseTime,
-- getLeaseTime, §9.4).
-- KEYS[1]  the permit counter
-- KEYS[2]  the lease set "{<name>}:timeout"
-- KEYS[3]  the channel "redisson_sc:{<name>}"
-- ARGV[1]  "available": the permits available; "acquired": the permits taken and not expired;
--          "lease": the ms left of permit ARGV[2]'s lease (-1: it never expires; -2: no such
--          permit, or its lease ran out); "update": set permit ARGV[2]'s lease to ARGV[3] ms from
--          now (-1: never expires) if it is held and not expired (1 if so, else 0)
-- ARGV[2]  a permit id (16 bytes), for "lease" and "update"
-- ARGV[3]  the new lease in ms, for "update"
-- Returns  as above. Every kind first reclaims up to 1000 expired permits (given back to the
--          counter, the new count published), on the server's clock (TIME). An error reply when
--          the counter holds no integer (WRONGTYPE).
-- Safe to run twice: a second "update" sets the same lease from a later now.
--!include expirable_prelude.lua
reclaim('1000')
if ARGV[1] == 'available' then
  return tonumber(value or '0')
end
if ARGV[1] == 'acquired' then
  return redis.call('zcard', KEYS[2])
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
