-- queue_prelude: helpers of the queued scripts, included where a script says
-- `--!include queue_prelude.lua` (cmake/embed_lua.cmake), after defining `queue_key`, the
-- lock's queue key. A queue is two keys in the lock's slot: q, a zset of owner field -> arrival
-- number, and live (named after q: queue_sibling), a hash of owner field ->
-- "<deadline ms>:<lease ms>:<token>" with the deadline on the server's clock and the token of
-- the acquire that queued it (an id unique within its client). Hand-off messages go to the
-- recipient's process only: "rlock_handoff:{<name>}:<client uuid>", so that the other waiting
-- processes are not woken; they carry the token, so that a late message cannot be taken for a
-- later acquire of the same owner.
-- Constants passed to redis.call are strings ('1', not 1): the server formats a number
-- argument with snprintf, a measurable share of a short script's cost.
-- The key or channel `prefix` of the lock whose queue is `q`: `prefix` followed by what follows
-- "rlock_queue" in q (":{<name>}", or ":<name>" when the name has a hash tag), so it has the
-- same hash tag as the lock (the same slot). Scripts name the liveness hash and the hand-off
-- channels' prefix this way instead of taking them as arguments: each argument of a script
-- costs the server more than the concatenation.
local function queue_sibling(q, prefix)
  return prefix .. string.sub(q, 12)
end
-- The waiters' liveness hash of the including script's queue, `queue_key` (a local the script
-- defines before this include): rlock_queue_live:{<name>}.
local live = queue_sibling(queue_key, 'rlock_queue_live')
local now_ms
-- The server's time in ms, read once per script run, and only if needed.
local function now()
  if not now_ms then
    local t = redis.call('time')
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now_ms
end
-- Takes `who` off the queue; true if it was queued. A liveness entry is only ever read for a
-- queued owner, so one is deleted only with its queue entry. (Redis deletes a zset or a hash
-- with its last member: a queue emptied this way is gone.)
local function leave(q, live, who)
  if redis.call('zrem', q, who) == 0 then
    return false
  end
  redis.call('hdel', live, who)
  return true
end
-- Takes the first waiter whose deadline has not passed off the queue and returns it with the
-- TTL to hand it the lock with and its token; stale entries on the way are dropped. nil when
-- there is none. The TTL is the waiter's lease, but never past its deadline: a waiter that died
-- since its last refresh holds the lock only until then, not for its whole lease. A live one
-- extends it once told (its watchdog's first renewal comes within a third of the TTL; a longer
-- explicit lease is set at once). (ZRANGE and ZREM, not ZPOPMIN: the documented ACL rule and
-- servers older than Redis 5.0 keep working.)
local function pop_live_head(q, live)
  while true do
    local head = redis.call('zrange', q, '0', '0')[1]
    if not head then
      return nil
    end
    local v = redis.call('hget', live, head)
    leave(q, live, head)
    if v then
      local deadline, lease, token = string.match(v, '^(%d+):(%d+):?(%w*)$')
      if deadline and tonumber(deadline) > now() then
        return head, math.min(tonumber(lease), tonumber(deadline) - now()), token
      end
    end
  end
end
-- Tells `who` that it now holds the lock, on its own process's hand-off channel
-- "rlock_handoff:{<name>}:<client uuid>" (the owner field up to its last ':'), with the payload
-- "<who> <server ms> <zero_follows> <token>". `zero_follows`: "1" when a "0" on the Redisson
-- channel follows in the same script, else "0"; `token`: the one of the acquire that queued it.
local function tell(who, zero_follows, token)
  local process = string.match(who, '^(.*):')
  redis.call('publish', queue_sibling(queue_key, 'rlock_handoff') .. ':' .. process,
    who .. ' ' .. now() .. ' ' .. zero_follows .. ' ' .. (token or ''))
end
-- 1 when the lock's holder hands it over through the queue when it unlocks: an rlock client
-- with the queue on, whose client uuid is an RFC 9562 version-8 UUID (Redisson's are version 4,
-- and an rlock client with the queue off uses version 4 too). Its waiters need not hear the
-- Redisson channel's "0". 1 also when the lock is free (nothing to wait for).
local function holder_hands_off(lock)
  local holder = redis.call('hkeys', lock)[1]
  if holder == nil or string.sub(holder, 15, 15) == '8' then
    return 1
  end
  return 0
end
-- Makes `who` (a live waiter that pop_live_head took off the queue) the owner of the free lock
-- with its own lease, and tells it (see tell).
local function hand_over(lock, who, lease, token, zero_follows)
  redis.call('hset', lock, who, '1')
  redis.call('pexpire', lock, lease)
  tell(who, zero_follows, token)
end
-- Sets `key`'s TTL to `ms` unless it already has a longer one: waiters of clients configured
-- with a longer liveness keep their queue.
local function extend(key, ms)
  local ttl = redis.call('pttl', key)
  if ttl == -1 or (ttl >= 0 and ttl < ms) then
    redis.call('pexpire', key, ms)
  end
end
