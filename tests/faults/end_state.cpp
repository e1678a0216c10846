#include "faults/end_state.hpp"

#include <algorithm>
#include <string_view>

#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

long long stat_calls(const std::string& info, std::string_view command) {
  const std::string tag = "cmdstat_" + std::string(command) + ":calls=";
  const auto pos = info.find(tag);
  if (pos == std::string::npos) return 0;
  return std::stoll(info.substr(pos + tag.size()));
}

}  // namespace

std::vector<std::string> end_state::leaks() const {
  std::vector<std::string> out;
  if (idle_renewals > 0) {
    out.push_back(std::to_string(idle_renewals) + " script calls while every worker was idle");
  }
  for (const auto& k : keys_left) out.push_back("key left: " + k);
  for (const auto& k : latches_without_ttl) out.push_back("unlock latch without TTL: " + k);
  for (const auto& k : unexpected_keys) out.push_back("unexpected key: " + k);
  if (subscribers > 0) out.push_back(std::to_string(subscribers) + " subscribers left");
  for (const auto& c : channels_left) out.push_back("channel left: " + c);
  return out;
}

long long script_calls(const test::redis_server& server) {
  const std::string info = server.cli({"INFO", "commandstats"});
  return stat_calls(info, "evalsha") + stat_calls(info, "eval");
}

void check_leftovers(const test::redis_server& server, const std::string& name,
                     std::chrono::milliseconds longest_ttl, bool fenced, end_state& out) {
  const std::string zero_channel = "redisson_lock__channel:{" + name + "}";
  // Hand-off channels are per process: rlock_handoff:{name}:<client uuid>.
  const std::string handoff_channels = "rlock_handoff:{" + name + "}:*";
  auto numsub = [&] {
    long long n = server.cli_reply({"PUBSUB", "NUMSUB", zero_channel}).elements.at(1).integer;
    for (const auto& c : server.cli_reply({"PUBSUB", "CHANNELS", handoff_channels}).elements) {
      n += server.cli_reply({"PUBSUB", "NUMSUB", c.str}).elements.at(1).integer;
    }
    return n;
  };
  // External state: the server notices closed connections on its own schedule.
  test::wait_until([&] { return numsub() == 0; }, 3s, 20ms);
  out.subscribers = numsub();
  for (const auto& c : server.cli_reply({"PUBSUB", "CHANNELS"}).elements) {
    out.channels_left.push_back(c.str);
  }

  const std::vector<std::string> lock_keys{name, "rlock_queue:{" + name + "}",
                                           "rlock_queue_live:{" + name + "}"};
  for (const auto& key : lock_keys) {
    const long long pttl = server.cli_reply({"PTTL", key}).integer;
    if (pttl == -2) continue;
    if (pttl == -1) {
      out.keys_left.push_back(key + " (no TTL)");
    } else if (pttl > longest_ttl.count()) {
      out.keys_left.push_back(key + " (TTL " + std::to_string(pttl) + " ms)");
    } else if (test::wait_until(
                   [&] {
                     return server.cli({"EXISTS", key}) == "0";
                   },
                   std::chrono::milliseconds(pttl) + 500ms, 20ms)) {
      out.keys_lingering.push_back(key + " (expired " + std::to_string(pttl) +
                                   " ms after the end)");
    } else {
      out.keys_left.push_back(key + " (still there after its TTL)");
    }
  }
  for (const auto& k : server.cli_reply({"KEYS", "*"}).elements) {
    if (k.str.starts_with("redisson_unlock_latch:")) {
      ++out.latches;
      if (server.cli_reply({"PTTL", k.str}).integer == -1) out.latches_without_ttl.push_back(k.str);
    } else if (fenced && k.str == "redisson_lock_token:{" + name + "}") {
      continue;
    } else if (std::find(lock_keys.begin(), lock_keys.end(), k.str) == lock_keys.end()) {
      out.unexpected_keys.push_back(k.str);
    }
  }
}

}  // namespace rlock::faults
