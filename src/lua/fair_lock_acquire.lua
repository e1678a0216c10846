-- fair_lock_acquire: take, re-enter or queue for a fair lock (Redisson's RFairLock, protocol
-- reference §3.3), idempotently when retried.
-- KEYS[1]  the lock key: a hash of owner field -> hold count
-- KEYS[2]  the queue "redisson_lock_queue:{<name>}": owner fields in arrival order
-- KEYS[3]  the eviction times "redisson_lock_timeout:{<name>}": owner field -> epoch ms
-- ARGV[1]  lease in milliseconds
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
-- ARGV[3]  the owner's hold count before this acquire (as lock_acquire's ARGV[3]: a count of
--          ARGV[3] + 1 means an earlier attempt of this acquire was applied)
-- ARGV[4]  the wait time in ms (Redisson's threadWaitTime): "0" for a single attempt, which
--          never queues
-- Returns  nil when acquired (the owner's count incremented, the TTL set to the lease; a waiter
--          that takes the lock leaves the queue, and those behind it move up); otherwise the ms
--          after which trying again is worth it: the lock's PTTL (-1: no TTL), or, while the lock
--          is free but the queue's head has not taken it yet, the time until that head's
--          eviction (it is told on its channel; this waiter, once head, is told too).
-- A waiting acquire that finds the lock held queues the owner, once: its eviction time is the
-- one of the waiter before it (or the lock's TTL) plus the wait time. Its later attempts, while
-- it is queued, move that time out to (its position + 1) wait times from now (never nearer), so
-- a waiter that tries again at least once per wait time is never evicted as stale.
local fair_queue, fair_timeouts = KEYS[2], KEYS[3]
--!include fair_prelude.lua
fair_purge()
local prior = tonumber(ARGV[3])
local held = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')
if prior > 0 or held > 0 then
  -- A re-entry, or the resend of an acquire that was applied.
  if held == prior + 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
  end
  if prior > 0 and held == 0 then
    return math.max(redis.call('pttl', KEYS[1]), 0)
  end
  if held > 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], '1')
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
  end
end
local head = redis.call('lindex', KEYS[2], 0)
if redis.call('exists', KEYS[1]) == 0 and ((not head) or head == ARGV[2]) then
  if head then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[2])
    -- Each waiter moved one place up: its eviction comes one wait time sooner (Redisson's).
    local wait = tonumber(ARGV[4])
    if wait > 0 then
      local waiters = redis.call('zrange', KEYS[3], '0', '-1')
      for _, waiter in ipairs(waiters) do
        redis.call('zincrby', KEYS[3], -wait, waiter)
      end
    end
  end
  redis.call('hset', KEYS[1], ARGV[2], '1')
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
local function retry_in()
  local ttl = redis.call('pttl', KEYS[1])
  if ttl >= 0 or ttl == -1 then
    return ttl
  end
  -- Free, but the head has not taken it: at the latest when the head is evicted.
  local first = redis.call('lindex', KEYS[2], 0)
  local timeout = first and tonumber(redis.call('zscore', KEYS[3], first))
  if timeout then
    return math.max(timeout - fair_now, 0)
  end
  return 0
end
if ARGV[4] == '0' then
  return retry_in()
end
local score = redis.call('zscore', KEYS[3], ARGV[2])
if score then
  -- Already queued: a live waiter's retry moves its eviction time out to (position + 1) wait
  -- times from now, never nearer (Redisson's scripts only read and lower the times, and a
  -- waiter moves up one place each time they lower its time by one wait, so it still has one
  -- wait time left when it is the head). Redisson's waiters never do this, so a live one that
  -- waited longer than its wait time in all is evicted (#3004).
  local pos
  if redis.REDIS_VERSION_NUM then
    pos = redis.call('lpos', KEYS[2], ARGV[2])
  else
    local queue = redis.call('lrange', KEYS[2], '0', '-1')
    for i, waiter in ipairs(queue) do
      if waiter == ARGV[2] then
        pos = i - 1
        break
      end
    end
  end
  if pos then
    local refreshed = fair_now + (pos + 1) * tonumber(ARGV[4])
    if tonumber(score) < refreshed then
      redis.call('zadd', KEYS[3], refreshed, ARGV[2])
    end
  end
else
  local last = redis.call('lindex', KEYS[2], -1)
  local ttl
  local before = last and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last)
  if before then
    ttl = tonumber(before) - fair_now
  else
    ttl = redis.call('pttl', KEYS[1])
  end
  local timeout = ttl + tonumber(ARGV[4]) + fair_now
  if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
  end
end
return retry_in()
