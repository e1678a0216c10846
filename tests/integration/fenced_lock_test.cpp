// rlock::fenced_lock against a real server: tokens, their order across holders (rlock and a
// Java RFencedLock peer), Redisson's key layout, and what a failed token step leaves behind.
#include "rlock/fenced_lock.hpp"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

// Redisson's RFencedLock acquire with a token (protocol reference §6.2), as a Java peer runs
// it: KEYS[1] lock, KEYS[2] token counter; ARGV[1] lease, ARGV[2] owner. {-1, token} when
// acquired, else {pttl, -1}.
constexpr const char* java_fenced_acquire =
    "if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) "
    "then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return {-1, redis.call('incr', KEYS[2])} end; return {redis.call('pttl', KEYS[1]), -1}";
// Redisson's unlock without the latch (§1.3): KEYS[1] lock, KEYS[2] channel; ARGV[1] owner.
constexpr const char* java_unlock =
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end; "
    "if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then return 0 end; "
    "redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], '0'); return 1";
constexpr char java_owner[] = "2f0c2a3e-8d0c-4c7e-9a55-6a1b2c3d4e5f:42";

// The token a Java peer's acquire got, or -1 when the lock was held.
long long java_acquire(const redis_server& server, const std::string& name) {
  const auto r = server.cli_reply({"EVAL", java_fenced_acquire, "2", name,
                                   "redisson_lock_token:{" + name + "}", "30000", java_owner});
  EXPECT_EQ(r.type, raw_reply::kind::array);
  if (r.elements.size() != 2) return -2;
  return r.elements[1].integer;
}

void java_release(const redis_server& server, const std::string& name) {
  server.cli({"EVAL", java_unlock, "2", name, "redisson_lock__channel:{" + name + "}", java_owner});
}

TEST(fenced_lock, every_acquire_reentry_included_gets_a_greater_token) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  fenced_lock la = a.get_fenced_lock("fence");
  EXPECT_EQ(la.token_key(), "redisson_lock_token:{fence}");
  EXPECT_EQ(la.token(), 0);  // none issued yet
  EXPECT_EQ(la.lock_and_get_token(), 1);
  EXPECT_EQ(la.lock_and_get_token(10s), 2);  // a re-entry is an acquire too (Redisson's INCR)
  EXPECT_EQ(la.as_lock().hold_count(), 2);
  fenced_lock lb = b.get_fenced_lock("fence");
  EXPECT_EQ(lb.try_lock_and_get_token(), std::nullopt);  // held: no token, counter unchanged
  EXPECT_EQ(lb.token(), 2);
  la.unlock_or_throw();
  la.unlock_or_throw();
  EXPECT_EQ(lb.try_lock_and_get_token(1s), 3);
  lb.unlock_or_throw();
  // Redisson's layout: the counter stays, without a TTL, when the lock is gone.
  EXPECT_EQ(server.cli({"EXISTS", "fence"}), "0");
  EXPECT_EQ(server.cli({"GET", "redisson_lock_token:{fence}"}), "3");
  EXPECT_EQ(server.cli_reply({"PTTL", "redisson_lock_token:{fence}"}).integer, -1);
  // TimedLockable: a guard's acquire issues a token as well.
  {
    std::lock_guard<fenced_lock> g(la);
    EXPECT_EQ(la.token(), 4);
  }
  EXPECT_TRUE(la.try_lock_for(100ms));
  la.unlock();
  EXPECT_EQ(la.token(), 5);
}

TEST(fenced_lock, a_name_with_a_hash_tag_keeps_the_counter_under_its_own_tag) {
  redis_server server;
  client c(config_for(server));
  fenced_lock l = c.get_fenced_lock("orders{eu}");
  EXPECT_EQ(l.token_key(), "redisson_lock_token:orders{eu}");
  EXPECT_EQ(l.lock_and_get_token(), 1);
  l.unlock_or_throw();
  EXPECT_EQ(server.cli({"GET", "redisson_lock_token:orders{eu}"}), "1");
}

// Holders alternate between a Java RFencedLock peer (raw scripts) and rlock: every holder's
// token is greater than the one before, whoever issued it, and each side waits for the other.
TEST(fenced_lock, tokens_of_rlock_and_java_peers_are_ordered_together) {
  redis_server server;
  client c(config_for(server));
  fenced_lock l = c.get_fenced_lock("mixed");
  long long last = 0;
  for (int round = 0; round < 3; ++round) {
    const long long java = java_acquire(server, "mixed");
    EXPECT_GT(java, last);
    last = java;
    // An rlock waiter (owner 7) while the Java peer holds: woken by its unlock's "0".
    std::promise<std::optional<fencing_token>> got;
    acquire_options o;
    o.wait = 20s;
    l.async_acquire(7, o, [&got](std::error_code ec, std::optional<fencing_token> t) {
      EXPECT_FALSE(ec) << ec.message();
      got.set_value(t);
    });
    ASSERT_TRUE(
        wait_until([&] { return numsub_of(server, "redisson_lock__channel:{mixed}") >= 1; }, 5s));
    java_release(server, "mixed");
    const auto mine = got.get_future().get();
    ASSERT_TRUE(mine.has_value());
    EXPECT_GT(*mine, last);
    last = *mine;
    EXPECT_EQ(java_acquire(server, "mixed"), -1);  // refused while rlock holds
    std::promise<std::error_code> released;
    l.async_unlock(7, [&released](std::error_code ec) { released.set_value(ec); });
    EXPECT_FALSE(released.get_future().get());
  }
  EXPECT_EQ(server.cli({"GET", "redisson_lock_token:{mixed}"}), std::to_string(last));
}

// Many holders in turn (queued hand-offs between clients, and between threads of one client):
// each one's token, checked inside its critical section, is greater than every earlier
// holder's, the check a fenced resource makes.
TEST(fenced_lock, contended_holders_pass_a_resource_that_refuses_stale_tokens) {
  redis_server server;
  constexpr int clients = 3;
  constexpr int threads_per_client = 2;
  constexpr int rounds = 40;
  std::vector<std::unique_ptr<client>> cs;
  cs.reserve(clients);
  for (int i = 0; i < clients; ++i) cs.push_back(std::make_unique<client>(config_for(server)));
  std::mutex mu;
  long long highest_seen = 0;
  int refused = 0;
  int inside = 0;
  int overlaps = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    for (int t = 0; t < threads_per_client; ++t) {
      threads.emplace_back([&, i] {
        fenced_lock l = cs[static_cast<std::size_t>(i)]->get_fenced_lock("contended");
        for (int r = 0; r < rounds; ++r) {
          const fencing_token token = l.lock_and_get_token();
          {
            std::lock_guard<std::mutex> g(mu);
            if (++inside > 1) ++overlaps;
            if (token <= highest_seen) {
              ++refused;
            } else {
              highest_seen = token;
            }
          }
          std::this_thread::yield();
          {
            std::lock_guard<std::mutex> g(mu);
            --inside;
          }
          l.unlock_or_throw();
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(refused, 0);
  EXPECT_EQ(overlaps, 0);
  EXPECT_EQ(highest_seen, clients * threads_per_client * rounds);
  EXPECT_EQ(server.cli({"EXISTS", "contended", "rlock_queue:{contended}"}), "0");
}

TEST(fenced_lock, async_acquire_completes_with_the_token_or_nullopt) {
  redis_server server;
  client c(config_for(server));
  fenced_lock l = c.get_fenced_lock("async-fence");
  using result = std::pair<std::error_code, std::optional<fencing_token>>;
  auto acquire = [&](std::uint64_t owner, std::chrono::milliseconds wait) {
    std::promise<result> p;
    acquire_options o;
    o.wait = wait;
    l.async_acquire(owner, o, [&p](std::error_code ec, std::optional<fencing_token> t) {
      p.set_value({ec, t});
    });
    return p.get_future().get();
  };
  const auto first = acquire(1, 1s);
  EXPECT_FALSE(first.first);
  EXPECT_EQ(first.second, 1);
  const auto refused = acquire(2, 0ms);
  EXPECT_FALSE(refused.first);
  EXPECT_EQ(refused.second, std::nullopt);
  std::promise<std::error_code> unlocked;
  l.async_unlock(1, [&](std::error_code ec) { unlocked.set_value(ec); });
  EXPECT_FALSE(unlocked.get_future().get());
  const auto second = acquire(2, 1s);
  EXPECT_EQ(second.second, 2);
  std::promise<std::pair<std::error_code, fencing_token>> read;
  l.async_token([&](std::error_code ec, fencing_token t) { read.set_value({ec, t}); });
  const auto [ec, t] = read.get_future().get();
  EXPECT_FALSE(ec);
  EXPECT_EQ(t, 2);
}

// A counter that cannot be incremented fails the acquire with the server's reason, and the
// hold the acquire took is released again: no hold is ever returned without its token.
TEST(fenced_lock, a_counter_that_is_no_integer_fails_the_acquire_and_leaves_no_hold) {
  redis_server server;
  client c(config_for(server));
  fenced_lock l = c.get_fenced_lock("bad-counter");
  server.cli({"SET", "redisson_lock_token:{bad-counter}", "not a number"});
  try {
    (void)l.lock_and_get_token();
    ADD_FAILURE() << "acquired with a counter that is no integer";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::script_error) << e.what();
    EXPECT_NE(std::string(e.what()).find("not an integer"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.cli({"EXISTS", "bad-counter"}), "0");
  EXPECT_EQ(l.as_lock().hold_count(), 0);
  EXPECT_THROW((void)l.token(), error);  // GET of no integer: errc::wrong_type

  server.cli({"DEL", "redisson_lock_token:{bad-counter}"});
  server.cli({"HSET", "redisson_lock_token:{bad-counter}", "f", "v"});
  try {
    (void)l.try_lock_and_get_token(1s);
    ADD_FAILURE() << "acquired with a hash for a counter";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::wrong_type) << e.what();
  }
  EXPECT_EQ(server.cli({"EXISTS", "bad-counter"}), "0");

  server.cli({"DEL", "redisson_lock_token:{bad-counter}"});
  EXPECT_EQ(l.lock_and_get_token(), 1);
  l.unlock_or_throw();
}

// An ACL user without INCR: the token step is refused (NOPERM inside the script), the acquire
// fails with errc::no_permission, and its hold is released. With +incr (the README's rule for
// fenced locks) it works.
TEST(fenced_lock, a_user_without_incr_gets_no_permission_and_no_hold) {
  const std::string base =
      "on >pw ~* resetchannels &redisson_lock__channel:* &rlock_handoff:* -@all "
      "+ping +client|setname +client|info +client|kill +select +script|load +eval +evalsha "
      "+subscribe +unsubscribe +publish +del +exists +get +set +hdel +hexists +hget +hincrby "
      "+hkeys +hset +pexpire +pttl +time +zadd +zcard +zrange +zrem +zscore";
  server_options o;
  o.acl_users = {"plain " + base, "fencer " + base + " +incr"};
  redis_server server(o);
  config cfg = config_for(server);
  const std::string at = "@127.0.0.1:" + std::to_string(server.port());
  cfg.address = "redis://plain:pw" + at;
  {
    client c(cfg);
    fenced_lock l = c.get_fenced_lock("acl-fence");
    try {
      (void)l.lock_and_get_token();
      ADD_FAILURE() << "acquired without INCR";
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::no_permission) << e.what();
    }
    EXPECT_EQ(server.cli({"EXISTS", "acl-fence"}), "0");
  }
  cfg.address = "redis://fencer:pw" + at;
  client c(cfg);
  fenced_lock l = c.get_fenced_lock("acl-fence");
  EXPECT_EQ(l.lock_and_get_token(), 1);
  EXPECT_EQ(l.token(), 1);
  l.unlock_or_throw();
}

}  // namespace
}  // namespace rlock::test
