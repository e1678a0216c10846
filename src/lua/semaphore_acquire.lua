-- semaphore_acquire: take permits of a semaphore if that many are available (Redisson's
-- RSemaphore tryAcquire), at most once per request.
-- KEYS[1]  the permit counter: a string integer (Redisson's layout; no key: no permits)
-- KEYS[2]  this request's latch "rlock_semaphore_latch:{<name>}:<32 hex request id>"
-- ARGV[1]  permits to take, a whole number >= 1
-- ARGV[2]  latch TTL in ms
-- Returns  1: taken (now, or by an earlier attempt of this request, whose latch says so);
--          0: fewer available (nothing changed). An error reply when the counter holds no
--          integer (the key is not a semaphore's).
-- A resend after a lost reply finds the latch and does not take the permits twice. A failed
-- attempt leaves no latch: a resend may then take them, and reports that.
if redis.call('get', KEYS[2]) then
  return 1
end
local value = redis.call('get', KEYS[1])
if not value then
  return 0
end
local available = tonumber(value)
if not available or available ~= math.floor(available) then
  return redis.error_reply('WRONGTYPE semaphore key holds no integer permit count')
end
if available < tonumber(ARGV[1]) then
  return 0
end
redis.call('decrby', KEYS[1], ARGV[1])
redis.call('set', KEYS[2], '1', 'px', ARGV[2])
return 1
