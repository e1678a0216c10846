// A Redis at maxmemory with noeviction (issue #7, bad input): acquires fail with out_of_memory
// at once instead of waiting, other keys are untouched, a held lock can still be released (the
// final unlock deletes first), and the same client works again once memory is freed.
#include <gtest/gtest.h>

#include <string>

#include "common.hpp"
#include "hostile_common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

// A server whose memory is full: one large value, then maxmemory a little below what the server
// uses; deleting the value frees enough to go back under it.
class full_server {
 public:
  full_server() : server_(server_options{.extra_args = {"--maxmemory-policy", "noeviction"}}) {}

  redis_server& server() { return server_; }

  void fill() {
    // The value goes in first (while there is no limit: a query buffer counts as used memory),
    // then the limit drops below what the server now uses. noeviction keeps everything.
    ASSERT_EQ(server_.cli({"SET", "filler", std::string(2 * headroom, 'f')}), "OK");
    const long long used = info_field(server_, "memory", "used_memory");
    server_.cli({"CONFIG", "SET", "maxmemory", std::to_string(used - headroom)});
    ASSERT_NE(server_.cli({"SET", "probe", "x"}).find("OOM"), std::string::npos)
        << "the server must refuse writes now";
  }

  void free() {
    ASSERT_EQ(server_.cli({"DEL", "filler"}), "1");
    ASSERT_EQ(server_.cli({"SET", "probe", "x"}), "OK") << "the server must accept writes again";
    server_.cli({"DEL", "probe"});
  }

 private:
  static constexpr long long headroom = 1 << 20;
  redis_server server_;
};

TEST(hostile_oom, acquires_fail_with_out_of_memory_at_once_and_touch_nothing) {
  full_server full;
  redis_server& server = full.server();
  server.cli({"SET", "other", "v"});
  config cfg = config_for(server);
  cfg.timeout = 2s;
  client c(cfg);
  c.execute({"PING"});
  full.fill();

  // Not transient: one attempt, so each call ends within one request timeout.
  const auto bound = cfg.timeout;
  auto l = c.get_lock("oom");
  const outcome one_attempt = run_bounded([&] { return l.try_lock(); });
  EXPECT_EQ(one_attempt.ec, errc::out_of_memory) << one_attempt.what;
  EXPECT_LT(one_attempt.took, bound.count());

  // With a wait budget and without one, the acquire does not wait for memory: it reports OOM.
  const outcome with_wait = run_bounded([&] { return l.try_lock(10s); });
  EXPECT_EQ(with_wait.ec, errc::out_of_memory) << with_wait.what;
  EXPECT_LT(with_wait.took, bound.count());
  const outcome no_budget = run_bounded([&] {
    l.lock();
    return true;
  });
  EXPECT_EQ(no_budget.ec, errc::out_of_memory) << no_budget.what;
  EXPECT_LT(no_budget.took, bound.count());

  EXPECT_EQ(server.cli({"EXISTS", "oom"}), "0");
  EXPECT_EQ(server.cli({"GET", "other"}), "v");
  EXPECT_EQ(server.cli({"DBSIZE"}), "2") << "only 'other' and the filler";
  EXPECT_EQ(l.hold_count(), 0);

  full.free();
  ASSERT_TRUE(l.try_lock());
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "oom"}), "0");
  EXPECT_EQ(server.cli({"GET", "other"}), "v");
}

TEST(hostile_oom, a_lock_held_before_memory_ran_out) {
  full_server full;
  redis_server& server = full.server();
  config cfg = config_for(server);
  cfg.timeout = 2s;
  client c(cfg);
  auto l = c.get_lock("held");
  l.lock();
  full.fill();
  // Re-entry writes (HINCRBY), so it is refused like a first acquire, and the hold is unchanged.
  const outcome reentry = run_bounded([&] { return l.try_lock(); });
  EXPECT_EQ(reentry.ec, errc::out_of_memory) << reentry.what;
  EXPECT_LT(reentry.took, cfg.timeout.count());
  EXPECT_EQ(l.hold_count(), 1);
  // The final unlock deletes first (DEL is allowed at maxmemory, and a script that has written
  // may go on), so it releases the lock, wakes waiters and frees memory.
  const outcome unlock = run_bounded([&] {
    l.unlock_or_throw();
    return true;
  });
  EXPECT_TRUE(unlock.value) << unlock.what;
  EXPECT_LT(unlock.took, cfg.timeout.count());
  EXPECT_EQ(server.cli({"EXISTS", "held"}), "0");
  full.free();
  ASSERT_TRUE(l.try_lock());
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "held"}), "0");
}

}  // namespace
}  // namespace rlock::test
