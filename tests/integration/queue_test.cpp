// Queued hand-off (on by default): arrival order, crashed waiters, mixed Java-style clients,
// and no trace left behind.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "common.hpp"
#include "support/process.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

TEST(queue, arrival_order_is_respected_across_four_processes_of_four_threads) {
  redis_server server;
  client holder(config_for(server));
  auto l = holder.get_lock("fifo");
  l.lock();
  std::vector<child_process> workers;
  workers.reserve(4);
  for (int p = 0; p < 4; ++p) {
    workers.emplace_back(
        RLOCK_LOCK_WORKER,
        std::vector<std::string>{"ordered", server.url(), "fifo", std::to_string(p), "4"});
  }
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{fifo}") == 16; }, 30s));
  l.unlock_or_throw();
  for (auto& w : workers) {
    auto status = w.wait_for(30s);
    ASSERT_TRUE(status.has_value());
    EXPECT_EQ(*status, 0) << w.output();
  }
  auto order = server.cli_reply({"LRANGE", "fifo:order", "0", "-1"});
  ASSERT_EQ(order.elements.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(order.elements[i].str, std::to_string(i)) << i;
  // Nothing left behind: queue keys are deleted when the last waiter leaves.
  EXPECT_EQ(server.cli({"EXISTS", "fifo", "rlock_queue:{fifo}", "rlock_queue_live:{fifo}"}), "0");
}

TEST(queue, unlock_hands_over_without_an_acquire_script) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  auto la = a.get_lock("direct");
  la.lock();
  auto lb = b.get_lock("direct");
  auto waiter = std::async(std::launch::async, [&] {
    lb.lock();
    auto fields = server.cli_reply({"HGETALL", "direct"}).as_map();
    lb.unlock_or_throw();
    return fields;
  });
  // a's acquire, then b's enqueue and its one re-check once subscribed: three scripts.
  ASSERT_TRUE(wait_until([&] { return evalsha_calls(server) == 3; }, 5s)) << evalsha_calls(server);
  ASSERT_EQ(zcard(server, "rlock_queue:{direct}"), 1);
  la.unlock_or_throw();
  const auto fields = waiter.get();
  EXPECT_EQ(fields.size(), 1u);
  EXPECT_TRUE(fields.begin()->first.starts_with(b.id())) << "handed to the queued waiter";
  // Two more scripts: a's unlock (which handed over) and b's unlock. b never re-tried.
  EXPECT_EQ(evalsha_calls(server), 5);
}

TEST(queue, a_waiter_killed_while_queued_is_skipped_after_its_deadline) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_queue_liveness = 600ms;
  client holder(cfg);
  auto l = holder.get_lock("skip");
  l.lock();
  child_process doomed(RLOCK_LOCK_WORKER,
                       std::vector<std::string>{"wait-hold", server.url(), "skip", "30000", "600"});
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{skip}") == 1; }, 10s));
  client second(cfg);
  auto l2 = second.get_lock("skip");
  auto waiter = try_lock_then_unlock_async(l2, 10s);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{skip}") == 2; }, 10s));
  doomed.kill(SIGKILL);
  // The dead waiter's entry expires on the server's clock: observable only from outside.
  ASSERT_TRUE(wait_until(
      [&] {
        auto live = server.cli_reply({"HVALS", "rlock_queue_live:{skip}"});
        auto now = server.cli_reply({"TIME"});
        const long long ms =
            std::stoll(now.elements[0].str) * 1000 + std::stoll(now.elements[1].str) / 1000;
        for (const auto& v : live.elements) {
          if (std::stoll(v.str.substr(0, v.str.find(':'))) <= ms) return true;
        }
        return false;
      },
      5s));
  const auto t0 = steady::now();
  l.unlock_or_throw();
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(ms_since(t0), 1000) << "the stale head is skipped at once";
}

TEST(queue, a_waiter_killed_after_being_handed_the_lock_loses_it_within_its_lease) {
  redis_server server;
  client holder(config_for(server));
  auto l = holder.get_lock("handed");
  l.lock();
  child_process doomed(RLOCK_LOCK_WORKER, std::vector<std::string>{"wait-hold", server.url(),
                                                                   "handed", "800", "6000"});
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{handed}") == 1; }, 10s));
  doomed.kill(SIGSTOP);  // alive as far as the queue knows, but it cannot act on the hand-off
  l.unlock_or_throw();   // handed to the stopped waiter with its 800 ms lease
  EXPECT_EQ(server.cli({"EXISTS", "handed"}), "1");
  doomed.kill(SIGKILL);
  client second(config_for(server));
  auto l2 = second.get_lock("handed");
  const auto t0 = steady::now();
  ASSERT_TRUE(l2.try_lock(5s));
  EXPECT_LT(ms_since(t0), 800 + 500) << "recovered within the handed lease";
  l2.unlock_or_throw();
}

// A waiter killed after its last refresh, while its entry is still live, is handed the lock
// with its lease cut at its queue deadline: the lock is back within the liveness, not after
// the dead waiter's whole lease (30 s here, as the watchdog's default).
TEST(queue, a_waiter_killed_within_its_liveness_holds_a_handed_lock_only_until_its_deadline) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_queue_liveness = 1500ms;
  client holder(cfg);
  auto l = holder.get_lock("cut");
  l.lock();
  child_process doomed(RLOCK_LOCK_WORKER,
                       std::vector<std::string>{"wait-hold", server.url(), "cut", "30000", "1500"});
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{cut}") == 1; }, 10s));
  doomed.kill(SIGKILL);
  const auto t0 = steady::now();
  l.unlock_or_throw();  // handed to the dead waiter, unless its entry went stale already
  const long long pttl = server.cli_reply({"PTTL", "cut"}).integer;
  EXPECT_LE(pttl, 1500) << "handed with the dead waiter's whole lease";
  client second(cfg);
  auto l2 = second.get_lock("cut");
  ASSERT_TRUE(l2.try_lock(10s));
  EXPECT_LT(ms_since(t0), 1500 + 1000) << "recovered at the dead waiter's queue deadline";
  l2.unlock_or_throw();
}

// A live waiter handed the lock that way gets its whole lease all the same: an explicit lease
// is set at once, and a watchdog hold's first renewal comes within a third of the cut TTL.
TEST(queue, a_live_waiter_handed_a_cut_lease_extends_it_to_its_own) {
  redis_server server;
  config cfg = config_for(server);
  cfg.lock_queue_liveness = 900ms;
  client holder(cfg);
  client waiter(cfg);
  for (const bool watchdog : {false, true}) {
    SCOPED_TRACE(watchdog ? "watchdog" : "explicit lease");
    const std::string name = watchdog ? "cut-watchdog" : "cut-lease";
    auto l = holder.get_lock(name);
    l.lock();
    auto l2 = waiter.get_lock(name);
    std::promise<void> release;
    auto got = std::async(std::launch::async, [&] {
      if (!(watchdog ? l2.try_lock(10s) : l2.try_lock(10s, 20s))) return false;
      // The hold's local deadline moves past the cut TTL (900 ms): it is not lost then.
      const bool extended = wait_until([&] { return l2.valid_until() > steady::now() + 10s; }, 5s);
      release.get_future().wait();
      const bool lost = l2.loss_token().stop_requested();
      l2.unlock_or_throw();
      return extended && !lost;
    });
    ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{" + name + "}") == 1; }, 10s));
    l.unlock_or_throw();
    // The server's TTL grows past the cut one: at once for the explicit lease, by the first
    // renewal (within 300 ms) under the watchdog.
    EXPECT_TRUE(wait_until(
        [&] {
          return server.cli_reply({"PTTL", name}).integer > 10000;
        },
        5s))
        << "PTTL " << server.cli_reply({"PTTL", name}).integer;
    release.set_value();
    EXPECT_TRUE(got.get()) << "not acquired, not extended, or lost";
  }
}

TEST(queue, mutual_exclusion_with_queued_and_java_style_barging_clients) {
  redis_server server;
  std::vector<child_process> workers;
  workers.reserve(2);
  for (int p = 0; p < 2; ++p) {
    workers.emplace_back(RLOCK_LOCK_WORKER,
                         std::vector<std::string>{"count", server.url(), "mixed", "3", "100"});
  }
  for (int p = 0; p < 2; ++p) {
    workers.emplace_back(RLOCK_LOCK_WORKER,
                         std::vector<std::string>{"barge", server.url(), "mixed", "100"});
  }
  for (auto& w : workers) {
    auto status = w.wait_for(120s);
    ASSERT_TRUE(status.has_value()) << "worker did not finish";
    EXPECT_EQ(*status, 0) << w.output();
    EXPECT_NE(w.output().find("overlaps=0"), std::string::npos) << w.output();
  }
  EXPECT_EQ(server.cli({"GET", "mixed:counter"}), std::to_string(2 * 3 * 100 + 2 * 100));
  EXPECT_EQ(server.cli({"EXISTS", "mixed", "rlock_queue:{mixed}", "rlock_queue_live:{mixed}"}),
            "0");
}

TEST(queue, a_stop_request_while_queued_leaves_no_trace) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  auto la = a.get_lock("trace");
  la.lock();
  auto lb = b.get_lock("trace");
  std::stop_source stop;
  auto waiter = std::async(std::launch::async, [&] {
    try {
      lb.lock(stop.get_token());
    } catch (const error& e) {
      return e.code();
    }
    return std::error_code{};
  });
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{trace}") == 1; }, 5s));
  stop.request_stop();
  EXPECT_EQ(waiter.get(), errc::stopped);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{trace}") == 0; }, 2s));
  EXPECT_EQ(server.cli({"EXISTS", "rlock_queue:{trace}", "rlock_queue_live:{trace}"}), "0");
  la.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "trace"}), "0") << "the lock was not handed to the leaver";
}

TEST(queue, a_timed_out_waiter_that_was_handed_the_lock_passes_it_on) {
  redis_server server;
  client a(config_for(server));
  auto la = a.get_lock("pass");
  la.lock();
  client b(config_for(server));
  client c(config_for(server));
  auto lb = b.get_lock("pass");
  auto lc = c.get_lock("pass");
  auto first = std::async(std::launch::async, [&] { return lb.try_lock(300ms); });
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{pass}") == 1; }, 5s));
  auto second = try_lock_then_unlock_async(lc, 10s);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{pass}") == 2; }, 5s));
  EXPECT_FALSE(first.get());  // b gave up
  la.unlock_or_throw();       // b is no longer queued: c gets it
  EXPECT_TRUE(second.get());
  EXPECT_EQ(server.cli({"EXISTS", "pass", "rlock_queue:{pass}", "rlock_queue_live:{pass}"}), "0");
}

// The scripts name the liveness hash and the hand-off channel after the queue key (Lua's
// queue_sibling), the client names its channel with prefix_name: a name with its own hash tag
// must come out the same on both sides, or the waiter never hears its hand-off.
TEST(queue, a_name_with_a_hash_tag_queues_and_hands_over_under_its_own_tag) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  const std::string name = "{user}:lock";
  auto la = a.get_lock(name);
  la.lock();
  auto lb = b.get_lock(name);
  auto waiter = std::async(std::launch::async, [&] {
    lb.lock();
    auto fields = server.cli_reply({"HGETALL", name}).as_map();
    lb.unlock_or_throw();
    return fields;
  });
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{user}:lock") == 1; }, 5s));
  EXPECT_EQ(server.cli({"HLEN", "rlock_queue_live:{user}:lock"}), "1");
  ASSERT_TRUE(wait_until(
      [&] { return numsub_of(server, "rlock_handoff:{user}:lock:" + b.id()) == 1; }, 5s));
  // a's acquire, then b's enqueue and its one re-check once subscribed: three scripts. (Read
  // before the re-check had run, the count let it land after the snapshot: seen under TSan.)
  ASSERT_TRUE(wait_until([&] { return evalsha_calls(server) == 3; }, 5s)) << evalsha_calls(server);
  const long long scripts_before = evalsha_calls(server);
  la.unlock_or_throw();
  const auto fields = waiter.get();
  EXPECT_EQ(fields.size(), 1u);
  EXPECT_TRUE(fields.begin()->first.starts_with(b.id())) << "handed to the queued waiter";
  // a's unlock handed over and b's unlock released: b never re-tried its acquire.
  EXPECT_EQ(evalsha_calls(server), scripts_before + 2);
  EXPECT_EQ(server.cli({"EXISTS", name, "rlock_queue:{user}:lock", "rlock_queue_live:{user}:lock"}),
            "0");
}

TEST(queue, waiters_behind_queued_holders_are_told_on_their_own_process_channel_only) {
  redis_server server;
  client a(config_for(server));
  auto la = a.get_lock("herd");
  la.lock();
  std::vector<std::unique_ptr<client>> waiters;
  std::vector<std::future<void>> done;
  for (int i = 0; i < 3; ++i) {
    waiters.push_back(std::make_unique<client>(config_for(server)));
    done.push_back(std::async(std::launch::async, [&, i] {
      auto l = waiters[static_cast<std::size_t>(i)]->get_lock("herd");
      l.lock();
      l.unlock_or_throw();
    }));
    // One at a time, so that the queue's order is the clients' order.
    ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{herd}") == i + 1; }, 5s));
  }
  // Each waiting process listens on its own hand-off channel, and none on the Redisson channel:
  // an unlock wakes the recipient's process and nobody else.
  ASSERT_TRUE(wait_until(
      [&] {
        return server.cli_reply({"PUBSUB", "CHANNELS", "rlock_handoff:{herd}:*"}).elements.size() ==
               3;
      },
      5s));
  for (const auto& w : waiters) {
    EXPECT_EQ(numsub_of(server, "rlock_handoff:{herd}:" + w->id()), 1) << w->id();
  }
  EXPECT_EQ(numsub_of(server, "redisson_lock__channel:{herd}"), 0);
  auto spy = server.client();
  spy.send({"PSUBSCRIBE", "rlock_handoff:{herd}:*"});
  ASSERT_TRUE(spy.read(2s).has_value());
  la.unlock_or_throw();
  for (auto& d : done) d.get();
  // Three hand-offs (a to the first waiter, then along the queue), each on its recipient's
  // channel, in arrival order.
  for (const auto& w : waiters) {
    auto msg = spy.read(5s);
    ASSERT_TRUE(msg.has_value());
    ASSERT_EQ(msg->elements.size(), 4u);
    EXPECT_EQ(msg->elements[2].str, "rlock_handoff:{herd}:" + w->id());
    EXPECT_TRUE(msg->elements[3].str.starts_with(w->id() + ":")) << msg->elements[3].str;
  }
  EXPECT_FALSE(spy.read(200ms).has_value()) << "no other hand-off message";
}

// A hand-off message names the acquire it was published for (its token). A late message for an
// earlier acquire of the same owner, which learned it held the lock another way and has unlocked
// since, must not make a later acquire believe it holds a lock that is someone else's.
TEST(queue, a_hand_off_message_for_another_acquire_of_the_owner_is_ignored) {
  redis_server server;
  client holder(config_for(server));
  auto lh = holder.get_lock("stale");
  lh.lock();
  client w(config_for(server));
  auto lw = w.get_lock("stale");
  std::promise<std::error_code> got;
  lw.async_lock(7, [&got](std::error_code ec) { got.set_value(ec); });
  const std::string channel = "rlock_handoff:{stale}:" + w.id();
  ASSERT_TRUE(wait_until(
      [&] { return zcard(server, "rlock_queue:{stale}") == 1 && numsub_of(server, channel) == 1; },
      10s));
  const std::string owner = w.id() + ":7";
  server.cli({"PUBLISH", channel, owner + " 1 0 999999"});  // another acquire's token
  server.cli({"PUBLISH", channel, owner + " 1 0"});         // no token at all
  auto f = got.get_future();
  EXPECT_EQ(f.wait_for(1s), std::future_status::timeout) << "took a message for another acquire";
  EXPECT_EQ(server.cli_reply({"HGETALL", "stale"})
                .as_map()
                .count(holder.id() + ":" + std::to_string(this_thread_owner_id())),
            1u);
  lh.unlock_or_throw();  // the real hand-off, with the waiter's token
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(f.get());
  const auto fields = server.cli_reply({"HGETALL", "stale"}).as_map();
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields.begin()->first, owner);
  std::promise<std::error_code> released;
  lw.async_unlock(7, [&released](std::error_code ec) { released.set_value(ec); });
  EXPECT_FALSE(released.get_future().get());
}

// The queue keys' TTL only ever grows: a client configured with a shorter liveness must not
// shorten it for the waiters of one with a longer liveness (their entries would vanish).
TEST(queue, a_shorter_liveness_does_not_shorten_the_queue_of_longer_lived_waiters) {
  redis_server server;
  client holder(config_for(server));
  auto lh = holder.get_lock("mixed-live");
  lh.lock();
  config long_cfg = config_for(server);
  long_cfg.lock_queue_liveness = 60s;
  client patient(long_cfg);
  config short_cfg = config_for(server);
  short_cfg.lock_queue_liveness = 300ms;
  client hasty(short_cfg);
  auto lp = patient.get_lock("mixed-live");
  auto lq = hasty.get_lock("mixed-live");
  std::promise<std::error_code> p1;
  std::promise<bool> p2;
  lp.async_lock(1, [&p1](std::error_code ec) { p1.set_value(ec); });
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{mixed-live}") == 1; }, 10s));
  acquire_options once;
  once.wait = 100ms;
  lq.async_acquire(2, once, [&p2](std::error_code, bool acquired) { p2.set_value(acquired); });
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{mixed-live}") == 2; }, 10s));
  for (const char* key : {"rlock_queue:{mixed-live}", "rlock_queue_live:{mixed-live}"}) {
    EXPECT_GT(server.cli_reply({"PTTL", key}).integer, 60000) << key;
  }
  EXPECT_FALSE(p2.get_future().get());
  lh.unlock_or_throw();
  auto f1 = p1.get_future();
  ASSERT_EQ(f1.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(f1.get());
  std::promise<std::error_code> released;
  lp.async_unlock(1, [&released](std::error_code ec) { released.set_value(ec); });
  EXPECT_FALSE(released.get_future().get());
}

// A client shut down with several waiters queued takes them all off the queue before its
// connections close. Before, only the first leave script was written; the others were dropped
// with the connection, and an unlock within the queue's liveness handed the lock to a closed
// client, which held it for its lease (30 s).
TEST(queue, a_client_shut_down_with_waiters_leaves_the_queue) {
  redis_server server;
  client holder(config_for(server));
  auto lh = holder.get_lock("leaving");
  lh.lock();
  {
    client w(config_for(server));
    auto lw = w.get_lock("leaving");
    std::vector<std::promise<std::error_code>> got(4);
    for (std::uint64_t i = 0; i < got.size(); ++i) {
      lw.async_lock(100 + i, [&got, i](std::error_code ec) { got[i].set_value(ec); });
    }
    ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{leaving}") == 4; }, 10s));
    w.shutdown();
    for (auto& g : got) EXPECT_EQ(g.get_future().get(), errc::shutdown);
  }
  EXPECT_EQ(zcard(server, "rlock_queue:{leaving}"), 0);
  lh.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "leaving"}), "0") << "handed to a closed client";
}

TEST(queue, a_waiter_behind_a_holder_that_does_not_hand_over_hears_its_unlock) {
  redis_server server;
  // A Java Redisson peer's hold (a version-4 client uuid), written with raw commands: its
  // unlock does not know the queue, it only deletes the key and publishes "0".
  const std::string java = "2f0c2a3e-8d0c-4c7e-9a55-6a1b2c3d4e5f:42";
  server.cli({"HSET", "java", java, "1"});
  server.cli({"PEXPIRE", "java", "60000"});
  config cfg = config_for(server);
  cfg.lock_queue_liveness = 60s;  // no queue refresh (every 20 s) within this test
  client b(cfg);
  auto lb = b.get_lock("java");
  auto waiter = try_lock_then_unlock_async(lb, 30s);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{java}") == 1; }, 5s));
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_lock__channel:{java}") == 1; }, 5s));
  const auto t0 = steady::now();
  server.cli({"DEL", "java"});
  server.cli({"PUBLISH", "redisson_lock__channel:{java}", "0"});
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(ms_since(t0), 5000) << "woken by the \"0\", not by a lease or a refresh";
}

// A waiter queued behind an rlock holder listens only on its hand-off channel. When a Java
// Redisson peer then takes the lock (its forceUnlock, then its acquire), the waiter's next
// queue refresh finds a holder that does not hand over, and it subscribes to the Redisson
// channel, on which alone that peer announces its unlock. Before, it kept listening on its
// hand-off channel only, and heard of the unlock at its next refresh at best.
TEST(queue, a_waiter_queued_behind_rlock_then_java_listens_for_the_javas_unlock) {
  redis_server server;
  client a(config_for(server));
  auto la = a.get_lock("switch");
  la.lock();
  config cfg = config_for(server);
  cfg.lock_queue_liveness = 600ms;  // a queue refresh every 200 ms
  client b(cfg);
  auto lb = b.get_lock("switch");
  auto waiter = try_lock_then_unlock_async(lb, 30s);
  ASSERT_TRUE(wait_until([&] { return zcard(server, "rlock_queue:{switch}") == 1; }, 5s));
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "rlock_handoff:{switch}:" + b.id()) == 1; }, 5s));
  EXPECT_EQ(numsub_of(server, "redisson_lock__channel:{switch}"), 0);
  // The Java peer: forceUnlock (DEL, "0"), then at once its acquire (a version-4 client uuid),
  // in one script so that no queue refresh hands the free lock over in between.
  const std::string force_then_acquire =
      "redis.call('del', KEYS[1]); redis.call('publish', ARGV[1], '0'); "
      "redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], 60000)";
  server.cli({"EVAL", force_then_acquire, "1", "switch", "redisson_lock__channel:{switch}",
              "2f0c2a3e-8d0c-4c7e-9a55-6a1b2c3d4e5f:42"});
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_lock__channel:{switch}") == 1; }, 5s))
      << "the waiter does not listen for the Java holder's unlock";
  server.cli({"DEL", "switch"});
  server.cli({"PUBLISH", "redisson_lock__channel:{switch}", "0"});
  EXPECT_TRUE(waiter.get());
}

TEST(queue, a_client_without_the_queue_is_not_taken_for_one_that_hands_over) {
  redis_server server;
  config plain = config_for(server);
  plain.lock_queue = false;
  client a(plain);
  // Version 4, like Redisson's: queued waiters listen for this client's "0".
  EXPECT_EQ(a.id()[14], '4') << a.id();
  auto la = a.get_lock("plain");
  la.lock();
  config queued = config_for(server);
  queued.lock_queue_liveness = 60s;
  client b(queued);
  EXPECT_EQ(b.id()[14], '8') << b.id();
  auto lb = b.get_lock("plain");
  auto waiter = try_lock_then_unlock_async(lb, 30s);
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_lock__channel:{plain}") == 1; }, 5s));
  const auto t0 = steady::now();
  la.unlock_or_throw();
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(ms_since(t0), 5000);
}

}  // namespace
}  // namespace rlock::test
