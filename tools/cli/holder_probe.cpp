#include "holder_probe.hpp"

#include <mutex>
#include <optional>
#include <vector>

#include "duration.hpp"
#include "lock_inspection.hpp"
#include "redisson_names.hpp"

namespace rlock::cli {

struct holder_probe::state {
  std::mutex mu;
  int in_flight = 0;
  bool answered = false;
  bool settled = false;
  bool not_a_lock = false;
  std::function<void()> on_answer;
  std::vector<owner_hold> owners;
  std::optional<long long> pttl;
  std::optional<long long> available;  // permits: GET of the count (nullopt: no key)
  std::optional<long long> taken;      // permits: ZCARD of the leases
};

holder_probe::holder_probe(rlock::client& client, std::string key, std::function<void()> on_answer,
                           target what)
    : client_(client), key_(std::move(key)), what_(what), state_(std::make_shared<state>()) {
  state_->on_answer = std::move(on_answer);
}

void holder_probe::refresh() {
  {
    std::lock_guard lk(state_->mu);
    if (state_->in_flight > 0) return;
    state_->in_flight = 2;
  }
  if (what_ == target::permits) {
    refresh_permits();
    return;
  }
  client_.async_execute({"HGETALL", key_}, [s = state_](std::error_code ec, rlock::reply r) {
    {
      std::lock_guard lk(s->mu);
      --s->in_flight;
      s->settled = true;
      if (!ec) {
        s->owners = owners_from_hgetall(r);
        s->not_a_lock = r.size() > 0 && shape_of_hash(r) == hash_shape::other;
        s->answered = true;
      }
    }
    if (s->on_answer) s->on_answer();
  });
  client_.async_execute({"PTTL", key_}, [s = state_](std::error_code ec, rlock::reply r) {
    std::lock_guard lk(s->mu);
    --s->in_flight;
    if (ec) return;
    s->pttl = r.integer();
  });
}

void holder_probe::refresh_permits() {
  client_.async_execute({"GET", key_}, [s = state_](std::error_code ec, rlock::reply r) {
    {
      std::lock_guard lk(s->mu);
      --s->in_flight;
      s->settled = true;
      if (!ec) {
        s->available = r.is_nil() ? std::nullopt : to_integer(r.str());
        s->answered = true;
      }
    }
    if (s->on_answer) s->on_answer();
  });
  client_.async_execute({"ZCARD", redisson::expirable_semaphore_timeouts(key_)},
                        [s = state_](std::error_code ec, rlock::reply r) {
                          std::lock_guard lk(s->mu);
                          --s->in_flight;
                          if (ec) return;
                          s->taken = r.integer();
                        });
}

bool holder_probe::not_a_lock() const {
  std::lock_guard lk(state_->mu);
  return state_->not_a_lock;
}

bool holder_probe::settled() const {
  std::lock_guard lk(state_->mu);
  return state_->settled;
}

std::string holder_probe::describe() const {
  std::lock_guard lk(state_->mu);
  if (!state_->answered) return "";
  if (what_ == target::permits) {
    if (!state_->taken) return "";
    return std::to_string(*state_->taken) + " taken" +
           (state_->available ? ", " + std::to_string(*state_->available) + " free" : "");
  }
  if (state_->owners.empty()) return "free";
  std::string out;
  if (state_->pttl && *state_->pttl >= 0) {
    out += "ttl " + format_duration(std::chrono::milliseconds(*state_->pttl)) + ", ";
  }
  out += "held by ";
  for (std::size_t i = 0; i < state_->owners.size(); ++i) {
    const owner_hold& o = state_->owners[i];
    // "<uuid>:<id>" is long for one line: the uuid's first 8 characters identify the client.
    const std::size_t colon = o.owner.rfind(':');
    std::string who = o.owner;
    if (colon != std::string::npos && colon > 8)
      who = o.owner.substr(0, 8) + "..." + o.owner.substr(colon);
    out += (i ? ", " : "") + who;
    if (o.holds != 1) out += " (" + std::to_string(o.holds) + " holds)";
  }
  return out;
}

}  // namespace rlock::cli
