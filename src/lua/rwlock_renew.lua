-- rwlock_renew: the watchdog's batched renewal of read-write lock holds (Redisson's
-- RedissonReadLock and RedissonWriteLock renewal, §2 and §4).
-- KEYS[i]    lock hash i (1..n)
-- ARGV[1]    lease in ms
-- ARGV[i+1]  the hold's field in KEYS[i]: "<client uuid>:<owner id>" for read holds,
--            "<client uuid>:<owner id>:write" for write holds
-- Returns    an array of n integers: 1 when the field is still in KEYS[i] (its TTL is then at
--            least the lease, and so are those of the owner's read holds' timeout keys), 0 when
--            it is gone (the hold was lost), also when KEYS[i] holds another type now.
-- Never shortens a TTL. A read hold renews its own timeout keys only; Redisson's renews every
-- reader's, so one live reader keeps a crashed reader's holds alive with it.
--!include rwlock_prelude.lua
local version = redis.REDIS_VERSION_NUM or 0
local lease = tonumber(ARGV[1])
local function extend(key)
  if version >= 0x070000 then
    if redis.call('pexpire', key, ARGV[1], 'GT') == 0 and redis.call('pttl', key) == -1 then
      redis.call('pexpire', key, ARGV[1])
    end
  else
    local left = redis.call('pttl', key)
    if left ~= -2 and left < lease then
      redis.call('pexpire', key, ARGV[1])
    end
  end
end
local result = {}
for i = 1, #KEYS do
  local field = ARGV[i + 1]
  local ok, count = pcall(redis.call, 'hget', KEYS[i], field)
  if ok and count then
    extend(KEYS[i])
    if string.sub(field, -6) ~= ':write' then
      local prefix = rw_key_prefix(KEYS[i])
      for n = 1, tonumber(count) or 0 do
        extend(rw_timeout_key(prefix, field, n))
      end
    end
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
