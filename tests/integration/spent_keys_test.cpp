// Request keys (unlock latches; semaphore, read-write lock and countdown latch request keys) are
// deleted by the client once no attempt can read them, instead of staying on the server for
// their TTL (16-20 s at the defaults): while the client runs, for locks on more distinct names
// than its table of latches keeps, and at shutdown for what is left (spent_keys.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
// Named, not anonymous: the unity build puts this file beside other tests' helpers.
namespace spent_keys_test {

using namespace std::chrono_literals;

/// The server's keys whose names start with one of rlock's request-key prefixes.
std::vector<std::string> request_keys(const redis_server& server) {
  std::vector<std::string> out;
  for (const auto& k : server.cli_reply({"KEYS", "*"}).elements) {
    for (const char* prefix : {"redisson_unlock_latch:", "rlock_semaphore_latch:",
                               "rlock_rwlock_latch:", "rlock_countdown_request:"}) {
      if (k.str.starts_with(prefix)) out.push_back(k.str);
    }
  }
  return out;
}

std::string first_or_none(const std::vector<std::string>& keys) {
  return keys.empty() ? "none" : keys.front() + " and " + std::to_string(keys.size() - 1) + " more";
}

// 1,500 locks on distinct names (more than the 1,024 locks whose latches wait for their lock's
// next unlock), and every counted request of the other objects.
void use_every_kind(client& c, const std::string& prefix) {
  const auto named = [&prefix](std::string_view kind, int i) {
    std::string out = prefix;
    out += kind;
    out += std::to_string(i);
    return out;
  };
  for (int i = 0; i < 1500; ++i) {
    auto l = c.get_lock(named("lock-", i));
    l.lock();
    l.unlock();
  }
  for (int i = 0; i < 20; ++i) {
    auto s = c.get_semaphore(named("sem-", i));
    ASSERT_TRUE(s.try_set_permits(1));
    ASSERT_TRUE(s.try_acquire());
    EXPECT_FALSE(s.try_acquire()) << "a try that finds no permit has a key too";
    s.release();
    auto rw = c.get_read_write_lock(named("rw-", i));
    rw.lock();
    rw.unlock();
    rw.lock_shared();
    rw.unlock_shared();
    auto latch = c.get_countdown_latch(named("latch-", i));
    ASSERT_TRUE(latch.try_set_count(2));
    latch.count_down();
    auto ps = c.get_permit_expirable_semaphore(named("psem-", i));
    ASSERT_TRUE(ps.try_set_permits(1));
    const auto id = ps.try_acquire();
    ASSERT_TRUE(id.has_value());
    ps.release(*id);
  }
}

TEST(spent_keys, request_keys_of_a_running_client_are_deleted_within_moments) {
  redis_server server;
  client c(config_for(server));
  use_every_kind(c, "run-");
  // At most 1,024 locks keep their latches in the table, for their next unlock; every other
  // request key goes within spent_keys::delay (200 ms) of being spent. The TTLs are 16 s and
  // more, so a key waited out here was deleted, not expired.
  const std::size_t kept_for_next_unlock = 1024;
  std::vector<std::string> left;
  EXPECT_TRUE(wait_until(
      [&] {
        left = request_keys(server);
        return left.size() <= kept_for_next_unlock;
      },
      3s, 20ms))
      << left.size() << " request keys left, " << first_or_none(left);
  for (const auto& k : left) {
    EXPECT_TRUE(k.starts_with("redisson_unlock_latch:{run-lock-")) << k;
  }
  // And the data itself is as it should be.
  EXPECT_EQ(server.cli({"GET", "run-sem-3"}), "1");
  EXPECT_EQ(server.cli({"GET", "run-latch-3"}), "1");
  EXPECT_EQ(server.cli({"EXISTS", "run-lock-3"}), "0");
}

TEST(spent_keys, a_client_that_shuts_down_leaves_no_request_key) {
  redis_server server;
  {
    client c(config_for(server));
    use_every_kind(c, "end-");
    c.shutdown();
    // Not waited for: shutdown() returned after the DELs were answered.
    const auto left = request_keys(server);
    EXPECT_TRUE(left.empty()) << left.size() << " request keys left, " << first_or_none(left);
  }
  EXPECT_EQ(server.cli({"GET", "end-sem-3"}), "1");
}

TEST(spent_keys, a_lock_taken_over_and_over_deletes_its_latches_with_its_unlocks) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("again");
  server.cli({"CONFIG", "RESETSTAT"});
  for (int i = 0; i < 200; ++i) {
    l.lock();
    l.unlock();
  }
  // The next unlock script took them: no DEL request of the client's own (the unlock scripts'
  // DELs are counted as calls too, one per final release).
  EXPECT_EQ(calls_of(server, "del"), 200);
  EXPECT_LE(request_keys(server).size(), 1u) << "the last unlock's latch waits for the next";
}

}  // namespace spent_keys_test
}  // namespace rlock::test
