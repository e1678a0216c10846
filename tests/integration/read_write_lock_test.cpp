// rlock::read_write_lock against a real server: Redisson's layout (mode, owner fields, read
// timeout keys, redisson_rwlock:{<name>}), readers sharing and writers excluding, downgrade and
// no upgrade, waiting without polling (at a release, or when a crashed holder's TTL ends), the
// watchdog, loss, requests counted once, and clear errors.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "common.hpp"
#include "detail/rw_lock_ops.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

std::string owner_of(const client& c) {
  return c.id() + ":" + std::to_string(this_thread_owner_id());
}

TEST(read_write_lock, keeps_redissons_layout) {
  redis_server server;
  client c(config_for(server));
  read_write_lock rw = c.get_read_write_lock("rw");
  const std::string me = owner_of(c);
  rw.lock();
  EXPECT_EQ(server.cli({"HGET", "rw", "mode"}), "write");
  EXPECT_EQ(server.cli({"HGET", "rw", me + ":write"}), "1");
  EXPECT_GT(server.cli_reply({"PTTL", "rw"}).integer, 25000);
  EXPECT_EQ(rw.mode(), rw_mode::write);
  rw.unlock();
  EXPECT_EQ(server.cli_reply({"EXISTS", "rw"}).integer, 0);
  EXPECT_EQ(rw.mode(), std::nullopt);

  rw.lock_shared();
  rw.lock_shared();
  EXPECT_EQ(server.cli({"HGET", "rw", "mode"}), "read");
  EXPECT_EQ(server.cli({"HGET", "rw", me}), "2");
  EXPECT_EQ(rw.hold_count(rw_mode::read), 2);
  for (int n = 1; n <= 2; ++n) {
    const std::string timeout = "{rw}:" + me + ":rwlock_timeout:" + std::to_string(n);
    EXPECT_GT(server.cli_reply({"PTTL", timeout}).integer, 25000) << timeout;
  }
  rw.unlock_shared();
  EXPECT_EQ(server.cli_reply({"EXISTS", "{rw}:" + me + ":rwlock_timeout:2"}).integer, 0);
  rw.unlock_shared();
  EXPECT_EQ(server.cli_reply({"EXISTS", "rw"}).integer, 0);
  EXPECT_EQ(rw.hold_count(rw_mode::read), 0);

  // A name with a hash tag keeps its braces as the timeout keys' prefix (Redisson's suffixName).
  read_write_lock tagged = c.get_read_write_lock("a{t}b");
  tagged.lock_shared();
  EXPECT_GT(server.cli_reply({"PTTL", "a{t}b:" + me + ":rwlock_timeout:1"}).integer, 0);
  tagged.unlock_shared();
}

// Readers of two clients share the lock; a writer waits for both; a held write half keeps
// readers out.
TEST(read_write_lock, readers_share_and_a_writer_excludes) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  read_write_lock ra = a.get_read_write_lock("share");
  read_write_lock rb = b.get_read_write_lock("share");
  ASSERT_TRUE(ra.try_lock_shared());
  ASSERT_TRUE(rb.try_lock_shared());
  EXPECT_FALSE(rb.try_lock());
  EXPECT_FALSE(rb.try_lock_for(100ms));
  ra.unlock_shared();
  EXPECT_FALSE(rb.try_lock()) << "no upgrade: b still reads";
  rb.unlock_shared();
  ASSERT_TRUE(rb.try_lock());
  EXPECT_FALSE(ra.try_lock_shared());
  EXPECT_FALSE(ra.try_lock());
  rb.unlock();
  EXPECT_TRUE(ra.try_lock());
  ra.unlock();
}

// The write holder may read too (a downgrade); after its write release the lock stays read-held
// by it, and other readers join. A reader asking for the write half waits for itself.
TEST(read_write_lock, downgrades_but_never_upgrades) {
  redis_server server;
  client c(config_for(server));
  client other(config_for(server));
  read_write_lock rw = c.get_read_write_lock("down");
  read_write_lock them = other.get_read_write_lock("down");
  rw.lock();
  rw.lock();
  rw.lock_shared();
  EXPECT_FALSE(them.try_lock_shared());
  rw.unlock();
  EXPECT_EQ(server.cli({"HGET", "down", "mode"}), "write") << "one write hold left";
  rw.unlock();
  EXPECT_EQ(server.cli({"HGET", "down", "mode"}), "read");
  EXPECT_TRUE(them.try_lock_shared());
  them.unlock_shared();
  EXPECT_FALSE(rw.try_lock_for(200ms)) << "no upgrade";
  rw.unlock_shared();
  EXPECT_EQ(server.cli_reply({"EXISTS", "down"}).integer, 0);
}

// A waiting writer sleeps until the readers release: a try at its start and one when
// subscribed, then one per release.
TEST(read_write_lock, a_waiting_writer_wakes_at_the_release_without_polling) {
  redis_server server;
  client c(config_for(server));
  read_write_lock rw = c.get_read_write_lock("wake");
  rw.lock_shared();
  const long before = evalsha_calls(server);
  auto writer = std::async(std::launch::async, [&] {
    client other(config_for(server));
    read_write_lock mine = other.get_read_write_lock("wake");
    const bool got = mine.try_lock_for(30s);
    if (got) mine.unlock();
    return got;
  });
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_rwlock:{wake}") == 1; }, 10s, 10ms));
  // Its try at the start and its try once subscribed (which may land just after the
  // subscription). External state: wait for the server to have counted both.
  ASSERT_TRUE(wait_until([&] { return evalsha_calls(server) - before >= 2; }, 10s, 10ms));
  const long waiting = evalsha_calls(server) - before;
  EXPECT_EQ(waiting, 2) << "tries before the release";
  const auto t0 = steady::now();
  rw.unlock_shared();
  EXPECT_TRUE(writer.get());
  EXPECT_LT(ms_since(t0), 2000);
  // The release, the writer's one try after it, its release.
  EXPECT_LE(evalsha_calls(server) - before, waiting + 3);
}

// A holder that crashed announces nothing: the waiter tries again when the TTL its failed try
// returned has run out, not before.
TEST(read_write_lock, a_waiter_takes_the_lock_when_a_silent_holders_lease_ends) {
  redis_server server;
  client c(config_for(server));
  read_write_lock rw = c.get_read_write_lock("crash");
  // A Redisson writer that died: its hash with a lease, no release to come.
  server.cli({"HSET", "crash", "mode", "write", "dead-uuid:1:write", "1"});
  server.cli({"PEXPIRE", "crash", "700"});
  const long before = evalsha_calls(server);
  const auto t0 = steady::now();
  ASSERT_TRUE(rw.try_lock_shared_for(10s));
  const auto took = ms_since(t0);
  EXPECT_GE(took, 500);
  EXPECT_LT(took, 3000);
  EXPECT_LE(evalsha_calls(server) - before, 4) << "no polling while it waited";
  rw.unlock_shared();
}

TEST(read_write_lock, a_wait_without_a_release_ends_at_its_deadline_holding_nothing) {
  redis_server server;
  client c(config_for(server));
  client other(config_for(server));
  read_write_lock rw = c.get_read_write_lock("dry");
  rw.lock();
  read_write_lock them = other.get_read_write_lock("dry");
  const auto t0 = steady::now();
  EXPECT_FALSE(them.try_lock_shared_for(300ms));
  const auto took = ms_since(t0);
  EXPECT_GE(took, 300);
  EXPECT_LT(took, 300 + 2000);
  EXPECT_EQ(them.hold_count(rw_mode::read), 0);
  EXPECT_EQ(server.cli_reply({"HLEN", "dry"}).integer, 2) << "mode and the writer only";
  EXPECT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_rwlock:{dry}") == 0; }, 10s, 10ms));
  rw.unlock();
}

// Under the watchdog a read hold, and its timeout keys, outlive the watchdog timeout.
TEST(read_write_lock, the_watchdog_renews_a_read_hold_and_its_timeout_keys) {
  redis_server server;
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = 1500ms;  // renewed every 500 ms
  client c(cfg);
  read_write_lock rw = c.get_read_write_lock("renew");
  const std::string me = owner_of(c);
  const std::string timeout = "{renew}:" + me + ":rwlock_timeout:1";
  rw.lock();
  rw.lock_shared();  // a read hold of the write holder, renewed with it
  const long before = evalsha_calls(server);
  // Six renewal rounds: three watchdog timeouts' worth.
  ASSERT_TRUE(wait_until([&] { return evalsha_calls(server) - before >= 6; }, 20s, 20ms));
  EXPECT_GT(server.cli_reply({"PTTL", "renew"}).integer, 0);
  EXPECT_GT(server.cli_reply({"PTTL", timeout}).integer, 0);
  EXPECT_FALSE(rw.loss_token(rw_mode::read).stop_requested());
  EXPECT_FALSE(rw.loss_token(rw_mode::write).stop_requested());
  EXPECT_GT(rw.valid_until(rw_mode::read), steady::now());
  rw.unlock();
  rw.unlock_shared();
  EXPECT_EQ(server.cli_reply({"EXISTS", "renew"}).integer, 0);
}

// A hold deleted under its holder is reported lost; its release then says not_owner.
TEST(read_write_lock, a_lost_hold_is_reported) {
  redis_server server;
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = 1500ms;
  client c(cfg);
  read_write_lock rw = c.get_read_write_lock("lost");
  rw.lock_shared();
  std::stop_token lost = rw.loss_token(rw_mode::read);
  EXPECT_FALSE(lost.stop_requested());
  server.cli({"DEL", "lost"});
  EXPECT_TRUE(wait_until([&] { return lost.stop_requested(); }, 10s, 10ms));
  std::error_code ec;
  rw.release(rw_mode::read, ec);
  EXPECT_EQ(ec, errc::not_owner);
  rw.release(rw_mode::read, ec);
  EXPECT_EQ(ec, errc::not_owner) << "nothing left to release";
}

TEST(read_write_lock, works_with_the_standard_lock_types) {
  redis_server server;
  client c(config_for(server));
  read_write_lock rw = c.get_read_write_lock("std");
  {
    std::unique_lock write(rw);
    EXPECT_EQ(rw.mode(), rw_mode::write);
  }
  {
    std::shared_lock read(rw);
    EXPECT_EQ(rw.mode(), rw_mode::read);
    std::shared_lock again(rw, std::try_to_lock);
    EXPECT_TRUE(again.owns_lock());
  }
  EXPECT_EQ(rw.mode(), std::nullopt);
  std::unique_lock timed(rw, 100ms);
  EXPECT_TRUE(timed.owns_lock());
}

// Readers and writers of several clients: a writer is always alone, readers overlap only with
// readers; every hold is released.
TEST(read_write_lock, writers_are_alone_and_readers_only_share_with_readers) {
  redis_server server;
  constexpr int workers = 6;
  constexpr int rounds = 25;
  std::atomic<int> readers{0};
  std::atomic<int> writers{0};
  std::atomic<int> violations{0};
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      client c(config_for(server));
      read_write_lock rw = c.get_read_write_lock("mixed");
      for (int i = 0; i < rounds; ++i) {
        if ((i + w) % 3 == 0) {
          std::unique_lock hold(rw);
          if (writers.fetch_add(1) != 0 || readers.load() != 0) ++violations;
          std::this_thread::yield();
          writers.fetch_sub(1);
        } else {
          std::shared_lock hold(rw);
          readers.fetch_add(1);
          if (writers.load() != 0) ++violations;
          std::this_thread::sleep_for(1ms);  // the critical section's work
          readers.fetch_sub(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_EQ(server.cli_reply({"EXISTS", "mixed"}).integer, 0);
  // The timeout keys went with their holds.
  EXPECT_EQ(server.cli_reply({"KEYS", "{mixed}:*"}).elements.size(), 0U);
}

TEST(read_write_lock, a_stop_request_and_shutdown_end_the_wait_holding_nothing) {
  redis_server server;
  client c(config_for(server));
  read_write_lock rw = c.get_read_write_lock("stop");
  rw.lock_shared();
  {
    client other(config_for(server));
    read_write_lock them = other.get_read_write_lock("stop");
    std::stop_source source;
    acquire_options o;
    o.stop = source.get_token();
    auto waiting = std::async(std::launch::async, [&] { return them.acquire(rw_mode::write, o); });
    ASSERT_TRUE(
        wait_until([&] { return numsub_of(server, "redisson_rwlock:{stop}") == 1; }, 10s, 10ms));
    const auto t0 = steady::now();
    source.request_stop();
    EXPECT_EQ(code_of([&] { (void)waiting.get(); }), errc::stopped);
    EXPECT_LT(ms_since(t0), 1000);

    auto parked = std::async(std::launch::async, [&] { them.lock(); });
    ASSERT_TRUE(
        wait_until([&] { return numsub_of(server, "redisson_rwlock:{stop}") == 1; }, 10s, 10ms));
    other.shutdown();
    EXPECT_EQ(code_of([&] { parked.get(); }), errc::shutdown);
  }
  EXPECT_EQ(server.cli_reply({"HLEN", "stop"}).integer, 2) << "mode and the reader only";
  rw.unlock_shared();
}

TEST(read_write_lock, the_async_api_takes_and_releases) {
  redis_server server;
  client c(config_for(server));
  read_write_lock rw = c.get_read_write_lock("async");
  const std::uint64_t one = new_owner_id();
  const std::uint64_t two = new_owner_id();
  EXPECT_TRUE(rw.async_acquire(rw_mode::read, one, {}, asio::use_future).get());
  EXPECT_TRUE(rw.async_acquire(rw_mode::read, two, {}, asio::use_future).get());
  EXPECT_EQ(rw.hold_count(rw_mode::read, one), 1);
  acquire_options once;
  once.wait = 0ms;
  EXPECT_FALSE(rw.async_acquire(rw_mode::write, one, once, asio::use_future).get());
  rw.async_unlock(rw_mode::read, one, asio::use_future).get();
  rw.async_unlock(rw_mode::read, two, asio::use_future).get();
  EXPECT_TRUE(rw.async_acquire(rw_mode::write, one, once, asio::use_future).get());
  // A waiting acquire ended by its handler's cancellation slot holds nothing.
  asio::cancellation_signal cancel;
  auto result = std::make_shared<std::promise<std::error_code>>();
  rw.async_acquire(rw_mode::read, two, {},
                   asio::bind_cancellation_slot(cancel.slot(), [result](std::error_code ec, bool) {
                     result->set_value(ec);
                   }));
  ASSERT_TRUE(
      wait_until([&] { return numsub_of(server, "redisson_rwlock:{async}") == 1; }, 10s, 10ms));
  asio::post(c.core()->io(), [&] { cancel.emit(asio::cancellation_type::terminal); });
  EXPECT_EQ(result->get_future().get(), errc::stopped);
  EXPECT_EQ(rw.hold_count(rw_mode::read, two), 0);
  auto unlocked = std::make_shared<std::promise<std::error_code>>();
  rw.async_unlock(rw_mode::read, two, [unlocked](std::error_code ec) { unlocked->set_value(ec); });
  EXPECT_EQ(unlocked->get_future().get(), errc::not_owner);
  rw.async_unlock(rw_mode::write, one, asio::use_future).get();
  EXPECT_EQ(server.cli_reply({"EXISTS", "async"}).integer, 0);
}

// A Java reader's hold (its fields and timeout key written as Redisson writes them) is shared
// with, kept by, and excludes as, an rlock hold.
TEST(read_write_lock, shares_the_lock_with_a_redisson_reader) {
  redis_server server;
  client c(config_for(server));
  client other(config_for(server));
  const std::string java = "0b8e3a3c-6f3e-4c4e-9a43-3f1d2a1b0c9d:57";
  server.cli({"HSET", "mixed", "mode", "read", java, "1"});
  server.cli({"SET", "{mixed}:" + java + ":rwlock_timeout:1", "1", "PX", "30000"});
  server.cli({"PEXPIRE", "mixed", "30000"});
  read_write_lock rw = c.get_read_write_lock("mixed");
  ASSERT_TRUE(rw.try_lock_shared());
  EXPECT_FALSE(other.get_read_write_lock("mixed").try_lock());
  rw.unlock_shared();
  EXPECT_EQ(server.cli({"HGET", "mixed", java}), "1") << "the Java hold is left";
  EXPECT_GT(server.cli_reply({"PTTL", "mixed"}).integer, 25000) << "its timeout key's TTL";
  // Its timeout key gone (the Java reader crashed): the next rlock read release ends the lock.
  server.cli({"DEL", "{mixed}:" + java + ":rwlock_timeout:1"});
  ASSERT_TRUE(rw.try_lock_shared());
  rw.unlock_shared();
  EXPECT_EQ(server.cli_reply({"EXISTS", "mixed"}).integer, 0);
}

TEST(read_write_lock, force_unlock_deletes_and_tells_this_clients_holders) {
  redis_server server;
  client c(config_for(server));
  read_write_lock rw = c.get_read_write_lock("force");
  rw.lock_shared();
  std::stop_token lost = rw.loss_token(rw_mode::read);
  EXPECT_TRUE(rw.force_unlock());
  EXPECT_TRUE(lost.stop_requested());
  EXPECT_FALSE(rw.force_unlock());
  EXPECT_EQ(server.cli_reply({"EXISTS", "force"}).integer, 0);
  EXPECT_TRUE(rw.try_lock());
  rw.unlock();
}

TEST(read_write_lock, a_request_sent_twice_counts_once) {
  redis_server server;
  client c(config_for(server));
  const std::string me = owner_of(c);
  const std::vector<std::string> acquire_keys{"twice", "rlock_rwlock_latch:{twice}:a1", "{twice}"};
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(
        c.eval(detail::rwlock_acquire_script(), acquire_keys, {"30000", me, "read", "10000"})
            .is_nil());
  }
  EXPECT_EQ(server.cli({"HGET", "twice", me}), "1");
  const std::vector<std::string> unlock_keys{"twice", "redisson_rwlock:{twice}",
                                             "redisson_unlock_latch:{twice}:u1", "{twice}"};
  EXPECT_TRUE(c.eval(detail::rwlock_acquire_script(),
                     {"twice", "rlock_rwlock_latch:{twice}:a2", "{twice}"},
                     {"30000", me, "read", "10000"})
                  .is_nil());
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(c.eval(detail::rwlock_unlock_script(), unlock_keys, {"read", me, "30000", "10000"})
                  .integer(),
              0);
  }
  EXPECT_EQ(server.cli({"HGET", "twice", me}), "1");
  // The undo of acquire a1 releases once; an undo of an acquire that took nothing, nothing.
  std::vector<std::string> undo_keys = unlock_keys;
  undo_keys[2] = "redisson_unlock_latch:{twice}:u2";
  undo_keys.push_back("rlock_rwlock_latch:{twice}:a1");
  EXPECT_EQ(
      c.eval(detail::rwlock_unlock_script(), undo_keys, {"read", me, "30000", "10000"}).integer(),
      1);
  undo_keys[2] = "redisson_unlock_latch:{twice}:u3";
  EXPECT_EQ(
      c.eval(detail::rwlock_unlock_script(), undo_keys, {"read", me, "30000", "10000"}).integer(),
      -1);
  EXPECT_EQ(server.cli_reply({"EXISTS", "twice"}).integer, 0);
}

TEST(read_write_lock, a_key_of_another_kind_is_wrong_type_and_left_as_it_was) {
  redis_server server;
  server.cli({"SET", "text", "abc"});
  client c(config_for(server));
  read_write_lock rw = c.get_read_write_lock("text");
  EXPECT_EQ(code_of([&] { rw.lock(); }), errc::wrong_type);
  EXPECT_EQ(code_of([&] { (void)rw.try_lock_shared(); }), errc::wrong_type);
  EXPECT_EQ(code_of([&] { (void)rw.mode(); }), errc::wrong_type);
  EXPECT_EQ(code_of([&] { (void)rw.force_unlock(); }), errc::wrong_type);
  EXPECT_EQ(server.cli({"GET", "text"}), "abc");
  // A reentrant lock's hash of the same name is no read-write lock: never taken over.
  lock plain = c.get_lock("plain");
  plain.lock();
  read_write_lock over = c.get_read_write_lock("plain");
  EXPECT_EQ(code_of([&] { (void)over.try_lock_shared(); }), errc::wrong_type);
  EXPECT_EQ(code_of([&] { (void)over.try_lock(); }), errc::wrong_type);
  EXPECT_EQ(server.cli_reply({"HLEN", "plain"}).integer, 1) << "no mode field added";
  plain.unlock();
}

TEST(read_write_lock, bad_input_and_a_dead_server_fail_clearly) {
  redis_server server;
  client c(config_for(server));
  EXPECT_EQ(code_of([&] { (void)c.get_read_write_lock(""); }), errc::invalid_argument);
  read_write_lock rw = c.get_read_write_lock("bad");
  std::error_code ec;
  rw.release(rw_mode::write, ec);
  EXPECT_EQ(ec, errc::not_owner);
  rw.unlock();  // nothing held: does nothing, never throws

  redis_server down;
  config cfg = config_for(down);
  down.kill();
  client dead(cfg);
  read_write_lock gone = dead.get_read_write_lock("gone");
  const auto t0 = steady::now();
  EXPECT_EQ(code_of([&] { (void)gone.try_lock_shared_for(200ms); }), errc::connection_refused);
  EXPECT_EQ(code_of([&] { gone.lock(); }), errc::connection_refused);
  EXPECT_LT(ms_since(t0), 10000);
}

}  // namespace
}  // namespace rlock::test
