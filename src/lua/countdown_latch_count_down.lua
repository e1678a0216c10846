-- countdown_latch_count_down: count a countdown latch down by one (Redisson's
-- RCountDownLatch countDown), at most once per request.
-- KEYS[1]  the count: a string integer (Redisson's layout; no key: nothing to count down)
-- KEYS[2]  the channel "redisson_countdownlatch__channel__{<name>}"
-- KEYS[3]  this request's key "rlock_countdown_request:{<name>}:<32 hex request id>"
-- ARGV[1]  request key TTL in ms
-- Returns  the count after (0 once it reached zero; the key is then deleted, and "0" published
--          on the channel, waking the waiters, when this call made it zero). An attempt after an
--          earlier one of this request ran returns the first one's result without counting
--          again (Redisson's countDown is never resent instead). An error reply when the key
--          holds no integer.
local done = redis.call('get', KEYS[3])
if done then
  return tonumber(done)
end
local value = redis.call('get', KEYS[1])
if not value then
  redis.call('set', KEYS[3], '0', 'px', ARGV[1])
  return 0
end
if not tonumber(value) then
  return redis.error_reply('WRONGTYPE countdown latch key holds no integer count')
end
local v = redis.call('decr', KEYS[1])
if v <= 0 then
  redis.call('del', KEYS[1])
end
if v == 0 then
  redis.call('publish', KEYS[2], '0')
end
if v < 0 then
  v = 0
end
redis.call('set', KEYS[3], v, 'px', ARGV[1])
return v
