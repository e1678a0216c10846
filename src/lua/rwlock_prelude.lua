-- rwlock_prelude: helpers of the read-write lock's scripts (included, never run alone).
-- rw_key_prefix(name): Redisson's suffixName prefix of the read holds' timeout keys: the name
-- itself when it has a hash tag, else "{<name>}" (so that they share the lock's slot).
local function rw_key_prefix(name)
  if string.find(name, '{', 1, true) then
    return name
  end
  return '{' .. name .. '}'
end

-- The timeout key of read hold n of the owner field `field` (Redisson's
-- "{<name>}:<owner>:rwlock_timeout:<n>").
local function rw_timeout_key(prefix, field, n)
  return prefix .. ':' .. field .. ':rwlock_timeout:' .. n
end
