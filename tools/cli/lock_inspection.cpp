#include "lock_inspection.hpp"

#include <charconv>
#include <rlock/script.hpp>

#include "redisson_names.hpp"

namespace rlock::cli {
namespace {

// One atomic read of the key (TYPE, PTTL and the content are one snapshot: a lock that expires
// or changes hands between separate commands would read as a held lock without owners or TTL).
// Read-only. Returns {type, pttl, hash fields and values (HGETALL) or {}, string value or nil}.
const rlock::script& read_key_script() {
  static const rlock::script s(R"(local t = redis.call('type', KEYS[1])['ok']
if t == 'none' then return {t, -2, {}} end
local pttl = redis.call('pttl', KEYS[1])
if t == 'hash' then return {t, pttl, redis.call('hgetall', KEYS[1])} end
if t == 'string' then return {t, pttl, {}, redis.call('get', KEYS[1])} end
return {t, pttl, {}})");
  return s;
}

long long numsub(rlock::client& c, const std::string& channel) {
  const rlock::reply r = c.execute({"PUBSUB", "NUMSUB", channel});
  return r.size() >= 2 ? r[1].integer() : 0;
}

// "<id>:<thread id>": a non-empty id, then a decimal thread id (Java's thread id, rlock's owner
// id).
bool is_owner_field(std::string_view field) {
  const std::size_t colon = field.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  const std::string_view id = field.substr(colon + 1);
  if (id.empty() || id.size() > 20) return false;
  for (const char ch : id) {
    if (ch < '0' || ch > '9') return false;
  }
  return true;
}

bool exists(rlock::client& c, const std::string& key) {
  return c.execute({"EXISTS", key}).integer() > 0;
}

}  // namespace

std::optional<long long> to_integer(std::string_view s) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

hash_shape shape_of_hash(const rlock::reply_view& r) {
  constexpr std::string_view write_suffix = ":write";
  bool has_mode = false;
  bool has_write_owner = false;
  for (std::size_t i = 0; i + 1 < r.size(); i += 2) {
    const std::string_view field = r[i].str();
    const std::string_view value = r[i + 1].str();
    if (field == "mode") {
      if (value != "read" && value != "write") return hash_shape::other;
      has_mode = true;
      continue;
    }
    const auto holds = to_integer(value);
    if (!holds || *holds <= 0) return hash_shape::other;
    if (is_owner_field(field)) continue;
    if (field.size() > write_suffix.size() && field.ends_with(write_suffix) &&
        is_owner_field(field.substr(0, field.size() - write_suffix.size()))) {
      has_write_owner = true;
      continue;
    }
    return hash_shape::other;
  }
  if (has_mode) return hash_shape::read_write_lock;
  if (has_write_owner || r.size() < 2) return hash_shape::other;
  return hash_shape::lock;
}

std::vector<owner_hold> owners_from_hgetall(const rlock::reply_view& r) {
  std::vector<owner_hold> out;
  for (std::size_t i = 0; i + 1 < r.size(); i += 2) {
    const std::string_view field = r[i].str();
    if (field == "mode") continue;
    if (auto holds = to_integer(r[i + 1].str())) out.push_back({std::string(field), *holds});
  }
  return out;
}

lock_report read_lock(rlock::client& client, const std::string& name) {
  lock_report rep;
  rep.name = name;
  rep.key = client.get_lock(name).key();
  rep.channel = redisson::lock_channel(rep.key);
  const rlock::reply snapshot = client.eval(read_key_script(), {rep.key}, {});
  const std::string type(snapshot[0].str());
  if (type == "none") return rep;
  const long long pttl = snapshot[1].integer();
  if (pttl >= 0) rep.ttl_ms = pttl;
  if (type == "hash") {
    const rlock::reply_view all = snapshot[2];
    const hash_shape shape = shape_of_hash(all);
    if (shape == hash_shape::other) {
      rep.state = lock_state::other;
      rep.kind = "other:hash";
      return rep;
    }
    rep.state = lock_state::held;
    rep.owners = owners_from_hgetall(all);
    for (std::size_t i = 0; i + 1 < all.size(); i += 2) {
      if (all[i].str() == "mode") rep.mode = std::string(all[i + 1].str());
    }
    if (rep.mode) {
      rep.kind = "read_write_lock";
      rep.channel = redisson::read_write_lock_channel(rep.key);
    } else if (exists(client, redisson::fair_lock_queue(rep.key))) {
      rep.kind = "fair_lock";
    } else if (exists(client, redisson::fenced_lock_token(rep.key))) {
      rep.kind = "fenced_lock";
    } else {
      rep.kind = "lock";
    }
    return rep;
  }
  rep.state = lock_state::other;
  if (type == "string") {
    rep.value = to_integer(snapshot[3].str());
    if (exists(client, redisson::expirable_semaphore_timeouts(rep.key))) {
      rep.kind = "permit_expirable_semaphore";
      rep.channel = redisson::semaphore_channel(rep.key);
    } else if (rep.value) {
      rep.kind = "semaphore_or_latch";
      rep.channel = redisson::semaphore_channel(rep.key);
    } else {
      rep.kind = "other:string";
    }
    return rep;
  }
  rep.kind = "other:" + type;
  return rep;
}

lock_report inspect_lock(rlock::client& client, const std::string& name) {
  lock_report rep = read_lock(client, name);
  if (rep.kind == "fair_lock") {
    rep.listeners.reset();  // each waiter listens on "<channel>:<owner>": not counted
  } else {
    // Not rlock's hand-off channels: an rlock process waiting behind a Redisson holder listens
    // on both and would count twice; rlock's waiters are counted in `queued`.
    rep.listeners = numsub(client, rep.channel);
  }
  rep.queued = client.execute({"ZCARD", redisson::prefix_name("rlock_queue", rep.key)}).integer();
  if (rep.kind == "semaphore_or_latch" || rep.kind == "other:string") {
    const std::string latch = redisson::count_down_latch_channel(rep.key);
    if (const long long waiting = numsub(client, latch); waiting > 0) {
      rep.kind = "count_down_latch";
      rep.channel = latch;
      rep.listeners = waiting;
    }
  }
  if (rep.kind == "permit_expirable_semaphore") {
    rep.taken =
        client.execute({"ZCARD", redisson::expirable_semaphore_timeouts(rep.key)}).integer();
  }
  return rep;
}

const char* to_string(lock_state s) {
  switch (s) {
    case lock_state::free:
      return "free";
    case lock_state::held:
      return "held";
    case lock_state::other:
      return "other";
  }
  return "other";
}

}  // namespace rlock::cli
