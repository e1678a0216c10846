-- lock_acquire_queued: take the lock, or join its wait queue (rlock's queued hand-off).
-- KEYS[1]  the lock key: a hash of owner field -> hold count (Redisson's layout)
-- KEYS[2]  the wait queue "rlock_queue:{<name>}": a zset of owner field -> arrival number.
--          Named after it (queue_sibling): the waiters' liveness "rlock_queue_live:{<name>}", a
--          hash of owner field -> "<deadline ms>:<lease ms>:<token>" with the deadline on the
--          Redis server's clock (TIME), and the hand-off channels' prefix
--          "rlock_handoff:{<name>}" (a waiter's process listens on "<prefix>:<client uuid>")
-- ARGV[1]  lease in ms
-- ARGV[2]  owner field "<client-uuid>:<owner-id>"
-- ARGV[3]  the owner's hold count before this acquire. The owner is blocked in this acquire, so
--          a count of ARGV[3] + 1 means the lock is already its own: an earlier attempt whose
--          reply was lost, or a hand-off from the previous holder. It is not applied twice.
-- ARGV[4]  "0": one attempt, no queueing; else "<liveness>:<token>": the liveness in ms of the
--          queue entry without a refresh, and this acquire's token (letters and digits, unique
--          within its client), stored with the queue entry and sent back in the hand-off
--          message, so that a late message is not taken for a later acquire of the same owner.
--          (One argument, not two: each argument costs every call, the uncontended one too.)
-- Returns  nil when the owner holds the lock (acquired now, re-entered, or handed over);
--          otherwise {PTTL of the lock (-1: no TTL; at least 0 for a refused re-entry), server
--          time in ms, 1 if the holder hands the lock over through the queue when it unlocks
--          (an rlock client with the queue on: its waiters need not hear the Redisson channel),
--          else 0}.
-- A free lock goes to the first live waiter in the queue, not to whoever asks first; waiters
-- whose deadline has passed (crashed) are dropped as they reach the head. When a free lock is
-- found with another live waiter at the head, that waiter is made the owner and told on its
-- process's hand-off channel with the payload "<owner> <server ms> 0 <its token>".
-- A re-entry (ARGV[3] > 0) that finds no hold of its owner is refused, free lock or not, and is
-- not queued: the owner's hold is gone (expired, deleted, force-unlocked), and the client must
-- learn that, then acquire afresh. Taken here, the new hold would count 1 on the server and
-- N + 1 in the client, whose inner unlock would then delete the lock under its outer hold.
-- Constants passed to redis.call are strings ('1', not 1): the server formats a number
-- argument with snprintf, a measurable share of a short script's cost.
-- The uncontended case first: a free lock without a queue is taken before the queue's helpers
-- are even defined (one read, EXISTS of both keys, and two writes).
-- Otherwise that count (2: both exist) saves looking at each key again.
local present = ARGV[3] == '0' and redis.call('exists', KEYS[1], KEYS[2])
if present == 0 then
  redis.call('hset', KEYS[1], ARGV[2], '1')
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
local queued = present == 2 or redis.call('exists', KEYS[2]) == 1
-- Whether the lock exists, where the count says (nil: not known yet). Nothing below writes the
-- lock before it is read.
local lock_exists = nil
if present == 2 then
  lock_exists = true
elseif present == 1 then
  lock_exists = not queued
end
local queue_key = KEYS[2]
--!include queue_prelude.lua
local prior = tonumber(ARGV[3])
local held = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')

if held == prior + 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  if queued then
    leave(KEYS[2], live, ARGV[2])
  end
  return nil
end
if held > 0 then
  redis.call('hincrby', KEYS[1], ARGV[2], '1')
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if prior > 0 then
  return {math.max(redis.call('pttl', KEYS[1]), 0), now(), holder_hands_off(KEYS[1])}
end
if lock_exists == nil then
  lock_exists = redis.call('exists', KEYS[1]) == 1
end
if not lock_exists then
  local head, lease, token
  if queued then
    head, lease, token = pop_live_head(KEYS[2], live)
  end
  -- Off the queue either way: taken off as its head, or dropped on the way as stale (a live
  -- entry of the owner would have been reached before the queue ran out).
  if head == nil or head == ARGV[2] then
    redis.call('hset', KEYS[1], ARGV[2], '1')
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
  end
  hand_over(KEYS[1], head, lease, token, '0')
end
local liveness, token = string.match(ARGV[4], '^(%d+):(%w*)$')
if liveness then
  liveness = tonumber(liveness)
  -- After the last arrival; NX: a waiter already queued keeps its place.
  local last = redis.call('zrange', KEYS[2], '-1', '-1', 'WITHSCORES')
  local n = 1
  if last[2] then
    n = tonumber(last[2]) + 1
  end
  redis.call('zadd', KEYS[2], 'NX', n, ARGV[2])
  redis.call('hset', live, ARGV[2],
    (now() + liveness) .. ':' .. ARGV[1] .. ':' .. token)
  -- Queue keys expire when nobody refreshes them any more (every waiter crashed); never sooner
  -- than another waiter's longer liveness asked for.
  extend(KEYS[2], liveness * 2)
  extend(live, liveness * 2)
end
return {redis.call('pttl', KEYS[1]), now(), holder_hands_off(KEYS[1])}
