// Wire compatibility with Redisson: keys, fields, TTLs, channels, payloads, latch keys.
#include <gtest/gtest.h>

#include <future>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

TEST(lock_wire, hash_field_and_ttl_after_lock) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("wire");
  l.lock();
  const auto fields = server.cli_reply({"HGETALL", "wire"}).as_map();
  ASSERT_EQ(fields.size(), 1u);
  const std::string owner = c.id() + ":" + std::to_string(this_thread_owner_id());
  ASSERT_EQ(fields.count(owner), 1u) << fields.begin()->first;
  EXPECT_EQ(fields.at(owner), "1");
  // Version 8: this client hands the lock over through the wait queue (lock_queue, the
  // default); its waiters' processes need not listen on the Redisson channel.
  EXPECT_TRUE(std::regex_match(
      c.id(), std::regex("[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")));
  const auto pttl = server.cli_reply({"PTTL", "wire"}).integer;
  EXPECT_GT(pttl, 29000);
  EXPECT_LE(pttl, 30000);
  l.unlock_or_throw();
}

// The latches of `name`'s unlocks on the server: {key, value, PTTL}.
struct latch_key {
  std::string key;
  std::string value;
  long long pttl = 0;
};
std::vector<latch_key> latches_of(const redis_server& server, const std::string& name) {
  std::vector<latch_key> out;
  for (const auto& k :
       server.cli_reply({"KEYS", "redisson_unlock_latch:{" + name + "}:*"}).elements)
    out.push_back({k.str, server.cli({"GET", k.str}), server.cli_reply({"PTTL", k.str}).integer});
  return out;
}

TEST(lock_wire, final_unlock_publishes_zero_and_sets_the_latch) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("pub");
  auto sub = server.client();
  sub.send({"SUBSCRIBE", "redisson_lock__channel:{pub}"});
  ASSERT_TRUE(sub.read(2s).has_value());  // subscribe confirmation
  l.lock();
  l.lock();
  l.unlock_or_throw();  // partial: no message
  // Latch keys: one per unlock call, "0" for a partial unlock and "1" for the final one, with a
  // PX TTL of about (timeout + retry delay) x attempts.
  auto latches = latches_of(server, "pub");
  ASSERT_EQ(latches.size(), 1u);
  EXPECT_TRUE(
      std::regex_match(latches[0].key, std::regex(R"(redisson_unlock_latch:\{pub\}:[0-9a-f]{32})")))
      << latches[0].key;
  EXPECT_EQ(latches[0].value, "0");
  EXPECT_GT(latches[0].pttl, 10000);
  EXPECT_LE(latches[0].pttl, (3000 + 100) * 4);  // config_for: timeout 3000, retry delay max 100
  l.unlock_or_throw();                           // final: "0"
  auto msg = sub.read(2s);
  ASSERT_TRUE(msg.has_value());
  ASSERT_EQ(msg->elements.size(), 3u);
  EXPECT_EQ(msg->elements[0].str, "message");
  EXPECT_EQ(msg->elements[2].str, "0");
  EXPECT_FALSE(sub.read(100ms).has_value()) << "exactly one message";
  // The partial unlock was answered on its only attempt, so the final unlock's script deleted
  // its latch (as Redisson's DEL after the reply would); the final one's stays until the lock's
  // next script.
  latches = latches_of(server, "pub");
  ASSERT_EQ(latches.size(), 1u);
  EXPECT_EQ(latches[0].value, "1");
  EXPECT_GT(latches[0].pttl, 10000);
}

TEST(lock_wire, an_answered_unlocks_latch_goes_with_the_locks_next_unlock_script) {
  for (const bool queue : {true, false}) {
    SCOPED_TRACE(queue ? "queued" : "plain");
    redis_server server;
    config cfg = config_for(server);
    cfg.lock_queue = queue;
    client c(cfg);
    auto l = c.get_lock("spent");
    const auto only_latch = [&server] {
      auto latches = latches_of(server, "spent");
      EXPECT_EQ(latches.size(), 1u);
      return latches.empty() ? std::string() : latches[0].key;
    };
    l.lock();
    EXPECT_EQ(latches_of(server, "spent").size(), 0u);
    l.unlock_or_throw();
    std::string kept = only_latch();
    for (int i = 0; i < 3; ++i) {
      l.lock();
      EXPECT_EQ(only_latch(), kept) << "an acquire leaves it: only unlocks carry spent latches";
      l.unlock_or_throw();  // final release: the spent latch goes in the lock's own DEL
      const std::string next = only_latch();
      EXPECT_NE(next, kept) << "deleted by the unlock, which left its own";
      kept = next;
    }
    // A partial release deletes it too (after its own writes), and leaves its own "0" latch.
    l.lock();
    l.lock();
    l.unlock_or_throw();
    auto latches = latches_of(server, "spent");
    ASSERT_EQ(latches.size(), 1u);
    EXPECT_NE(latches[0].key, kept);
    EXPECT_EQ(latches[0].value, "0");
    l.unlock_or_throw();
    kept = only_latch();
    // Another lock's script does not touch it (nor could it in a cluster: another slot).
    auto other = c.get_lock("other");
    other.lock();
    other.unlock_or_throw();
    EXPECT_EQ(only_latch(), kept);
    // The same lock from another thread of the process: its unlock takes the latch along.
    std::async(std::launch::async, [&] {
      l.lock();
      l.unlock_or_throw();
    }).get();
    EXPECT_NE(only_latch(), kept);
  }
}

TEST(lock_wire, names_with_hash_tags_keep_their_own_tag) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("{user}:lock");
  auto sub = server.client();
  sub.send({"SUBSCRIBE", "redisson_lock__channel:{user}:lock"});
  ASSERT_TRUE(sub.read(2s).has_value());
  l.lock();
  l.unlock_or_throw();
  auto msg = sub.read(2s);
  ASSERT_TRUE(msg.has_value());
  EXPECT_EQ(msg->elements[2].str, "0");
}

TEST(lock_wire, foreign_redisson_owner_blocks_and_del_publish_wakes_at_once) {
  redis_server server;
  // A Java Redisson peer's hold, written with raw commands.
  const std::string foreign = "2f0c2a3e-8d0c-4c7e-9a55-6a1b2c3d4e5f:42";
  server.cli({"HSET", "shared", foreign, "1"});
  server.cli({"PEXPIRE", "shared", "30000"});
  client c(config_for(server));
  auto l = c.get_lock("shared");
  EXPECT_FALSE(l.try_lock());
  EXPECT_FALSE(l.try_lock(200ms));
  auto waiter = try_lock_then_unlock_async(l, 20s);
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_lock__channel:{shared}") == 1; }, 3s));
  const auto t0 = steady::now();
  server.cli({"DEL", "shared"});
  server.cli({"PUBLISH", "redisson_lock__channel:{shared}", "0"});
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(ms_since(t0), 500);
}

// A Java peer force-unlocks an rlock holder's lock and takes it (Redisson's forceUnlock, then
// its acquire), written with raw commands.
void java_peer_takes(const redis_server& server, const std::string& name) {
  server.cli({"DEL", name});
  server.cli({"PUBLISH", "redisson_lock__channel:{" + name + "}", "0"});
  server.cli({"HSET", name, "2f0c2a3e-8d0c-4c7e-9a55-6a1b2c3d4e5f:42", "1"});
  server.cli({"PEXPIRE", name, "30000"});
}

// A re-entry that finds the lock another's (lost before renewal noticed, with the 30 s
// watchdog up to 10 s later) is a fresh acquire: its hold's loss is told, and it waits like any
// waiter. Before, it never returned, not even at its deadline, and its entry in the Redis queue
// was never refreshed or left: a later unlock could hand the lock to it, and the owner's
// watchdog then kept it for ever.
TEST(lock_wire, a_re_entry_that_finds_the_lock_taken_waits_as_a_fresh_acquire) {
  redis_server server;
  client c(config_for(server));
  {
    auto l = c.get_lock("taken-a");
    l.lock();
    const std::stop_token first = l.loss_token();
    java_peer_takes(server, "taken-a");
    const auto t0 = steady::now();
    EXPECT_FALSE(l.try_lock(300ms));
    EXPECT_LT(ms_since(t0), 3000) << "a re-entry outlived its wait";
    EXPECT_TRUE(first.stop_requested()) << "the lost hold's holder was not told";
    EXPECT_EQ(l.hold_count(), 0);
    EXPECT_EQ(server.cli({"EXISTS", "rlock_queue:{taken-a}"}), "0") << "left in the queue";
  }
  {
    auto l = c.get_lock("taken-b");
    std::promise<void> held;
    std::promise<void> taken;
    auto worker = std::async(std::launch::async, [&] {
      l.lock();
      const std::stop_token first = l.loss_token();
      held.set_value();
      taken.get_future().wait();
      const bool got = l.try_lock(10s);
      const long long count = l.hold_count();
      const bool told = first.stop_requested();
      if (got) l.unlock_or_throw();
      return std::tuple{got, count, told};
    });
    held.get_future().wait();
    java_peer_takes(server, "taken-b");
    taken.set_value();
    ASSERT_TRUE(wait_until(
        [&] {
          return server.cli({"ZCARD", "rlock_queue:{taken-b}"}) == "1";
        },
        5s));
    // The peer's unlock (Redisson's script: DEL, "0").
    server.cli({"DEL", "taken-b"});
    server.cli({"PUBLISH", "redisson_lock__channel:{taken-b}", "0"});
    ASSERT_EQ(worker.wait_for(10s), std::future_status::ready) << "the re-entry never returned";
    const auto [got, count, told] = worker.get();
    EXPECT_TRUE(got);
    EXPECT_EQ(count, 1) << "a fresh hold, not a re-entry of the lost one";
    EXPECT_TRUE(told);
    EXPECT_EQ(server.cli({"EXISTS", "taken-b"}), "0");
  }
  config plain_cfg = config_for(server);
  plain_cfg.lock_queue = false;
  client plain(plain_cfg);
  for (client* cl : {&c, &plain}) {
    // Deleted (a force-unlock with nobody waiting): the lock is free, and the re-entry takes it
    // as a fresh hold. Before, it was counted as a re-entry (2 here, 1 on the server): the
    // inner unlock deleted the lock under the outer hold, whose loss nobody was told.
    SCOPED_TRACE(cl == &c ? "queue on" : "queue off");
    auto l = cl->get_lock("taken-c");
    l.lock();
    const std::stop_token first = l.loss_token();
    server.cli({"DEL", "taken-c"});
    EXPECT_TRUE(l.try_lock(300ms));
    EXPECT_TRUE(first.stop_requested()) << "the lost hold's holder was not told";
    EXPECT_EQ(l.hold_count(), 1);
    EXPECT_EQ(
        server.cli({"HGET", "taken-c", cl->id() + ":" + std::to_string(this_thread_owner_id())}),
        "1");
    EXPECT_FALSE(l.loss_token().stop_requested());
    l.unlock_or_throw();
    EXPECT_EQ(l.hold_count(), 0);
    EXPECT_EQ(server.cli({"EXISTS", "taken-c"}), "0");
  }
}

TEST(lock_wire, name_mapper_applies_to_key_and_channel) {
  redis_server server;
  config cfg = config_for(server);
  cfg.name_mapper = [](std::string_view n) { return "app:" + std::string(n); };
  client c(cfg);
  auto l = c.get_lock("m");
  l.lock();
  EXPECT_EQ(server.cli({"EXISTS", "app:m"}), "1");
  auto sub = server.client();
  sub.send({"SUBSCRIBE", "redisson_lock__channel:{app:m}"});
  ASSERT_TRUE(sub.read(2s).has_value());
  l.unlock_or_throw();
  auto msg = sub.read(2s);
  ASSERT_TRUE(msg.has_value());
  EXPECT_EQ(msg->elements[2].str, "0");
}

}  // namespace
}  // namespace rlock::test
