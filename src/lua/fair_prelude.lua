-- fair_prelude: what the fair lock's scripts share (Redisson's RFairLock, protocol reference
-- §3), included where a script says `--!include fair_prelude.lua`. The including script has
-- KEYS[1] the lock, fair_queue (the list "redisson_lock_queue:{<name>}") and fair_timeouts (the
-- sorted set "redisson_lock_timeout:{<name>}" of waiter -> eviction time, epoch ms) as locals
-- before the include.
-- Time is the server's (TIME), where Redisson passes each Java client's wall clock: rlock clients
-- then share one clock, and a client's clock jump changes nothing.
local fair_time = redis.call('time')
local fair_now = tonumber(fair_time[1]) * 1000 + math.floor(tonumber(fair_time[2]) / 1000)

-- Drops the heads whose eviction time has come (crashed waiters, and live ones that waited
-- longer than their wait time: Redisson's, #3004). A head without a time is dropped too (it
-- would block the queue for ever).
local function fair_purge()
  while true do
    local head = redis.call('lindex', fair_queue, 0)
    if not head then
      return
    end
    local timeout = tonumber(redis.call('zscore', fair_timeouts, head))
    if timeout ~= nil and timeout > fair_now then
      return
    end
    redis.call('zrem', fair_timeouts, head)
    redis.call('lpop', fair_queue)
  end
end

-- Tells the queue's head, on its own channel "<base>:<owner>", that the lock is free.
local function fair_notify_head(base)
  local head = redis.call('lindex', fair_queue, 0)
  if head then
    redis.call('publish', base .. ':' .. head, '0')
  end
end

-- Removes `owner` from the queue (Redisson's acquireFailed): the eviction times of those behind
-- it move `wait` ms earlier, as each moves one place up.
local function fair_leave(owner, wait)
  if not redis.call('zscore', fair_timeouts, owner) then
    redis.call('lrem', fair_queue, '0', owner)
    return
  end
  local queue = redis.call('lrange', fair_queue, '0', '-1')
  local behind = false
  for _, waiter in ipairs(queue) do
    if behind then
      redis.call('zincrby', fair_timeouts, -tonumber(wait), waiter)
    elseif waiter == owner then
      behind = true
    end
  end
  redis.call('zrem', fair_timeouts, owner)
  redis.call('lrem', fair_queue, '0', owner)
end
