-- lock_queue_refresh: keep a process's queued waiters alive, and find hand-offs they missed.
-- KEYS[1]  the lock key
-- KEYS[2]  the wait queue "rlock_queue:{<name>}"; the waiters' liveness and the hand-off
--          channels are named after it (queue_prelude's queue_sibling)
-- ARGV[1]  liveness in ms
-- ARGV[2..] owner fields of this process's waiters on this lock
-- Returns  {server time in ms, s1, s2, ...}: for owner i, 1 if it holds the lock (handed over;
--          its message may have been lost), 2 if it is queued (its deadline was extended),
--          3 if it is queued and the lock's holder does not hand it over through the queue (a
--          Java Redisson client, or an rlock client with the queue off, took it since the
--          waiter queued: the waiter must listen on the Redisson channel for its unlock), 0 if
--          it is in neither (its entry was dropped as stale: it must queue again).
-- If the lock is free (its holder expired, or a client that does not hand over released it)
-- the first live waiter is made owner and told on its process's channel.
local queue_key = KEYS[2]
--!include queue_prelude.lua

for i = 2, #ARGV do
  if redis.call('zscore', KEYS[2], ARGV[i]) then
    -- The entry's "<lease>:<token>" is kept; only its deadline moves.
    local v = redis.call('hget', live, ARGV[i])
    local rest = v and string.match(v, '^%d+:(%d+:?%w*)$') or '30000:'
    redis.call('hset', live, ARGV[i], (now() + tonumber(ARGV[1])) .. ':' .. rest)
  end
end
if redis.call('exists', KEYS[1]) == 0 then
  local head, lease, token = pop_live_head(KEYS[2], live)
  if head then
    hand_over(KEYS[1], head, lease, token, '0')
  end
end
-- Deletes an empty queue (and a liveness hash left without it); true while it has waiters.
local function tidy(q)
  if redis.call('zcard', q) == 0 then
    redis.call('del', q, live)
    return false
  end
  return true
end
local result = {now()}
local queued_status = 2
if holder_hands_off(KEYS[1]) == 0 then
  queued_status = 3
end
for i = 2, #ARGV do
  if redis.call('hexists', KEYS[1], ARGV[i]) == 1 then
    result[#result + 1] = 1
  elseif redis.call('zscore', KEYS[2], ARGV[i]) then
    result[#result + 1] = queued_status
  else
    result[#result + 1] = 0
  end
end
if tidy(KEYS[2]) then
  extend(KEYS[2], tonumber(ARGV[1]) * 2)
  extend(live, tonumber(ARGV[1]) * 2)
end
return result
