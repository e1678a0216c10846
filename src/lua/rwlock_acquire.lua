-- rwlock_acquire: take the read or the write half of a read-write lock (Redisson's
-- RReadWriteLock, protocol reference §4.2 and §4.4), at most once per request.
-- KEYS[1]  the lock hash: "mode" = read|write, "<owner>" = the owner's read holds,
--          "<owner>:write" = its write holds
-- KEYS[2]  this request's latch "rlock_rwlock_latch:{<name>}:<32 hex request id>"
-- KEYS[3]  the timeout key prefix: "{<name>}", or "<name>" when it has a hash tag; read hold n
--          of an owner has the key "<prefix>:<owner>:rwlock_timeout:<n>" with the hold's lease
-- ARGV[1]  lease in ms
-- ARGV[2]  the owner field "<client uuid>:<owner id>"
-- ARGV[3]  'read' or 'write'
-- ARGV[4]  latch TTL in ms
-- Returns  nil: taken (now, or by an earlier attempt of this request, whose latch says so);
--          otherwise the lock's PTTL in ms (-1: it has no TTL), nothing changed.
-- Read: taken when the lock is free, in read mode (readers share it; a waiting writer does not
-- stop new readers, as with Redisson), or write-held by this owner (a downgrade). Write: taken
-- when free, or re-entered by its write holder; never while anyone reads, this owner included
-- (no upgrade: a reader asking for the write half waits for itself). A re-entry sets the TTL to
-- the greater of what is left and the lease (Redisson adds the lease to what is left).
-- An error reply (WRONGTYPE) when KEYS[1] holds another type, or is a hash without "mode" (a
-- reentrant lock of the same name, say: Redisson's script would add "mode" to it and take it).
--!include rwlock_prelude.lua
if redis.call('exists', KEYS[2]) == 1 then
  return nil
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false and redis.call('exists', KEYS[1]) == 1 then
  -- A hash without "mode" is no read-write lock (a reentrant lock's, an application's): left
  -- as it is, never taken over.
  return redis.error_reply('WRONGTYPE the key is a hash without a read-write lock\'s mode field')
end
local read = ARGV[3] == 'read'
local field = ARGV[2]
local free = mode == false
local mine
if read then
  -- Readers share; the write holder may read too (a downgrade).
  mine = mode == 'read'
      or (mode == 'write' and redis.call('hexists', KEYS[1], field .. ':write') == 1)
else
  field = field .. ':write'
  mine = mode == 'write' and redis.call('hexists', KEYS[1], field) == 1
end
if not (free or mine) then
  return redis.call('pttl', KEYS[1])
end
if free then
  redis.call('hset', KEYS[1], 'mode', ARGV[3])
end
local n = redis.call('hincrby', KEYS[1], field, 1)
if read then
  redis.call('set', rw_timeout_key(KEYS[3], field, n), '1', 'px', ARGV[1])
end
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[1])
end
redis.call('set', KEYS[2], '1', 'px', ARGV[4])
return nil
