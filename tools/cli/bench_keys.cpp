#include "bench_keys.hpp"

#include <cstdio>
#include <random>
#include <rlock/client.hpp>
#include <set>

namespace rlock::cli {

std::string bench_prefix() {
  std::random_device rd;
  const std::uint64_t r = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  char buf[40];
  std::snprintf(buf, sizeof buf, "rlock-bench:%016llx:", static_cast<unsigned long long>(r));
  return buf;
}

std::vector<std::string> run_keys(rlock::client& c, const std::string& prefix) {
  // The prefix holds only [a-z0-9:-]: no glob characters to escape.
  std::set<std::string> keys;
  std::string cursor = "0";
  for (int calls = 0; calls < 1'000'000; ++calls) {
    const rlock::reply r =
        c.execute({"SCAN", cursor, "MATCH", "*" + prefix + "*", "COUNT", "1000"});
    if (!r.is_array() || r.size() != 2) break;
    cursor = std::string(r[0].str());
    const rlock::reply_view batch = r[1];
    for (std::size_t i = 0; i < batch.size(); ++i) keys.emplace(batch[i].str());
    if (cursor == "0") break;
  }
  return {keys.begin(), keys.end()};
}

namespace {

long long delete_keys(rlock::client& c, const std::vector<std::string>& keys) {
  long long deleted = 0;
  for (std::size_t i = 0; i < keys.size(); i += 500) {
    std::vector<std::string> args{"DEL"};
    for (std::size_t k = i; k < keys.size() && k < i + 500; ++k) args.push_back(keys[k]);
    deleted += c.execute(args).integer();
  }
  return deleted;
}

}  // namespace

long long delete_run_keys(rlock::client& c, const std::string& prefix) {
  return delete_keys(c, run_keys(c, prefix));
}

run_leftovers clean_up_run(rlock::client& c, const std::string& prefix) {
  const std::vector<std::string> keys = run_keys(c, prefix);
  run_leftovers left;
  for (const auto& k : keys) {
    if (k.starts_with("redisson_unlock_latch:")) {
      ++left.unlock_latches;
    } else if (k.starts_with("redisson_lock_token:")) {
      ++left.token_counters;
    } else {
      ++left.keys;
    }
  }
  delete_keys(c, keys);
  return left;
}

}  // namespace rlock::cli
