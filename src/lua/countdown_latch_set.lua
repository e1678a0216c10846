-- countdown_latch_set: set or delete a countdown latch (Redisson's RCountDownLatch trySetCount
-- and delete), at most once per request.
-- KEYS[1]  the count
-- KEYS[2]  the channel "redisson_countdownlatch__channel__{<name>}"
-- KEYS[3]  this request's key "rlock_countdown_request:{<name>}:<32 hex request id>"
-- ARGV[1]  "init": set the count to ARGV[2] only if the latch has none; "delete": delete it
-- ARGV[2]  the count for "init" (a whole number >= 1)
-- ARGV[3]  request key TTL in ms
-- Returns  1 if set (init) or deleted (delete), else 0; an attempt after an earlier one of this
--          request ran returns the first one's result. "1" (Redisson's new-count message) is
--          published when the count was set, and when a latch was deleted.
local done = redis.call('get', KEYS[3])
if done then
  return tonumber(done)
end
local result = 0
if ARGV[1] == 'init' then
  if redis.call('exists', KEYS[1]) == 0 then
    redis.call('set', KEYS[1], ARGV[2])
    redis.call('publish', KEYS[2], '1')
    result = 1
  end
elseif redis.call('del', KEYS[1]) == 1 then
  redis.call('publish', KEYS[2], '1')
  result = 1
end
redis.call('set', KEYS[3], result, 'px', ARGV[3])
return result
