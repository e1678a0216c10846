#include "detail/spent_keys.hpp"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

#include "detail/cluster_slots.hpp"
#include "detail/core.hpp"

namespace rlock::detail {

std::vector<std::vector<std::string>> del_batches(std::vector<std::string> keys, bool by_slot,
                                                  std::size_t max_keys) {
  std::vector<std::vector<std::string>> out;
  if (max_keys == 0) return out;
  auto add = [&](std::vector<std::string>& group) {
    for (std::size_t i = 0; i < group.size(); i += max_keys) {
      const auto from = group.begin() + static_cast<std::ptrdiff_t>(i);
      const auto to =
          group.begin() + static_cast<std::ptrdiff_t>(std::min(group.size(), i + max_keys));
      out.emplace_back(std::make_move_iterator(from), std::make_move_iterator(to));
    }
  };
  if (!by_slot) {
    add(keys);
    return out;
  }
  std::map<std::uint16_t, std::vector<std::string>> by;
  for (auto& k : keys) {
    const std::uint16_t slot = key_slot(k);
    by[slot].push_back(std::move(k));
  }
  for (auto& [slot, group] : by) add(group);
  return out;
}

// The DELs in flight, shared with their completions (which may run after this object is gone:
// on the fallback context, once the client has shut down).
struct spent_keys::tally {
  std::mutex mu;
  std::condition_variable none_left;
  int in_flight = 0;
};

spent_keys::spent_keys(core& c) : core_(c), timer_(c.io()), tally_(std::make_shared<tally>()) {}

void spent_keys::put(std::string key) {
  std::vector<std::string> one;
  one.push_back(std::move(key));
  put(std::move(one));
}

void spent_keys::put(std::vector<std::string> keys) {
  if (keys.empty()) return;
  std::vector<std::string> full;
  {
    std::lock_guard lk(mu_);
    if (closed_) return;
    for (auto& k : keys) {
      if (pending_.size() >= max_pending) break;
      pending_.push_back(std::move(k));
    }
    if (pending_.size() >= batch_keys) {
      full = std::exchange(pending_, {});
    } else if (!armed_) {
      armed_ = true;
      timer_.expires_after(delay);
      // The timer is cancelled by close(), which core::shutdown calls before it ends its I/O
      // threads and drains their queue: the handler never runs after this object is gone.
      timer_.async_wait([this](std::error_code ec) { on_timer(ec); });
    }
  }
  if (!full.empty()) send(std::move(full), std::chrono::steady_clock::now() + core_.cfg().timeout);
}

void spent_keys::on_timer(std::error_code ec) {
  std::vector<std::string> keys;
  {
    std::lock_guard lk(mu_);
    armed_ = false;
    if (ec || closed_) return;
    keys = std::exchange(pending_, {});
  }
  send(std::move(keys), std::chrono::steady_clock::now() + core_.cfg().timeout);
}

void spent_keys::send(std::vector<std::string> keys,
                      std::chrono::steady_clock::time_point deadline) {
  if (keys.empty()) return;
  for (auto& batch : del_batches(std::move(keys), core_.cluster_mode(), batch_keys)) {
    std::vector<std::string_view> args;
    args.reserve(1 + batch.size());
    args.emplace_back("DEL");
    args.insert(args.end(), batch.begin(), batch.end());
    exec_options opts;
    opts.idempotent = true;  // deleting twice deletes nothing more
    opts.deadline = deadline;
    opts.route_key = batch.front();
    {
      std::lock_guard lk(tally_->mu);
      ++tally_->in_flight;
    }
    core_.exec(args, opts, [t = tally_](const exec_result&) {
      std::lock_guard lk(t->mu);
      if (--t->in_flight == 0) t->none_left.notify_all();
    });
  }
}

void spent_keys::close(std::chrono::steady_clock::time_point until) {
  std::vector<std::string> keys;
  {
    std::lock_guard lk(mu_);
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    keys = std::exchange(pending_, {});
  }
  send(std::move(keys), until);
  if (core_.on_io_thread()) return;
  std::unique_lock lk(tally_->mu);
  tally_->none_left.wait_until(lk, until, [this] { return tally_->in_flight == 0; });
}

}  // namespace rlock::detail
