-- queue_prelude: helpers of the queued scripts, included where a script says
-- `--!include queue_prelude.lua` (cmake/embed_lua.cmake). A queue is two keys in the lock's
-- slot: q, a zset of owner field -> arrival number, and live, a hash of owner field ->
-- "<deadline ms>:<lease ms>" with the deadline on the server's clock.
local now_ms
-- The server's time in ms, read once per script run, and only if needed.
local function now()
  if not now_ms then
    local t = redis.call('time')
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now_ms
end
local function leave(q, live, who)
  redis.call('zrem', q, who)
  redis.call('hdel', live, who)
end
-- Deletes an empty queue; true while it has waiters.
local function tidy(q, live)
  if redis.call('zcard', q) == 0 then
    redis.call('del', q, live)
    return false
  end
  return true
end
-- The first waiter whose deadline has not passed, and its lease; stale entries on the way are
-- dropped. nil when there is none.
local function live_head(q, live)
  while true do
    local head = redis.call('zrange', q, 0, 0)[1]
    if not head then
      return nil
    end
    local v = redis.call('hget', live, head)
    if v then
      local deadline, lease = string.match(v, '^(%d+):(%d+)$')
      if tonumber(deadline) > now() then
        return head, lease
      end
    end
    leave(q, live, head)
  end
end
