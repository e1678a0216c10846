// C++20 coroutines (asio::awaitable) with the async API of the client and its locks. On their
// own in this file, which is compiled alone (not in a unity unit): scripts/tidy's clang-tidy 14
// cannot compile libstdc++ 12's coroutine support, which asio::awaitable needs, and so checks
// every test file but this one.
#include <gtest/gtest.h>

#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"

namespace rlock::test {
namespace {

TEST(connection, completion_tokens_future_and_coroutine) {
  redis_server server;
  client c(config_for(server));
  auto f = c.async_execute({"SET", "k", "v"}, asio::use_future);
  EXPECT_EQ(f.get().str(), "OK");
  asio::io_context io;
  std::string got;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // (GCC 12 miscompiles a braced list inside a co_await expression; name it first.)
        std::vector<std::string> cmd{"GET", "k"};
        reply r = co_await c.async_execute(std::move(cmd), asio::use_awaitable);
        got = std::string(r.str());
      },
      asio::detached);
  io.run();
  EXPECT_EQ(got, "v");
}

TEST(lock, futures_and_coroutines_with_explicit_owner) {
  redis_server server;
  client c(config_for(server));
  auto l = c.get_lock("async");
  EXPECT_TRUE(l.async_try_lock(77, asio::use_future).get());
  EXPECT_EQ(l.async_hold_count(77, asio::use_future).get(), 1);
  EXPECT_FALSE(l.async_try_lock(78, asio::use_future).get());
  l.async_unlock(77, asio::use_future).get();

  asio::io_context io;
  bool done = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await l.async_lock(5, asio::use_awaitable);  // owned by id 5, whatever the thread
        const bool held = co_await l.async_is_locked(asio::use_awaitable);
        EXPECT_TRUE(held);
        co_await l.async_unlock(5, asio::use_awaitable);
        done = true;
      },
      asio::detached);
  io.run();
  EXPECT_TRUE(done);
  EXPECT_FALSE(l.is_locked());
}

// Cancellation through the handler's slot (here the awaitable operator ||) ends a waiting
// acquire with errc::stopped and leaves nothing held or queued. Before, it was ignored: the
// acquire kept waiting (the || waits for both), and took the lock the caller had given up on.
TEST(lock, a_cancelled_async_lock_ends_at_once_and_leaves_nothing_held) {
  redis_server server;
  client a(config_for(server));
  client b(config_for(server));
  auto la = a.get_lock("cancel");
  la.lock();
  auto lb = b.get_lock("cancel");
  for (const bool queue : {true, false}) {
    SCOPED_TRACE(queue ? "queue on" : "queue off");
    config cfg = config_for(server);
    cfg.lock_queue = queue;
    client w(cfg);
    auto lw = w.get_lock("cancel");
    asio::io_context io;
    std::optional<std::size_t> winner;
    long long took = -1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          using namespace asio::experimental::awaitable_operators;
          asio::steady_timer t(io, 300ms);
          const auto t0 = steady::now();
          const auto r =
              co_await (lw.async_lock(5, asio::use_awaitable) || t.async_wait(asio::use_awaitable));
          winner = r.index();
          took = ms_since(t0);
        },
        asio::detached);
    io.run_for(10s);
    ASSERT_TRUE(winner.has_value()) << "the cancelled acquire kept waiting";
    EXPECT_EQ(*winner, 1u) << "the timer won";
    EXPECT_LT(took, 300 + 700);
    EXPECT_EQ(server.cli({"HLEN", "cancel"}), "1") << "only a's hold";
    EXPECT_EQ(server.cli({"EXISTS", "rlock_queue:{cancel}"}), "0") << "nothing queued";
  }
  la.unlock_or_throw();
  EXPECT_EQ(server.cli({"EXISTS", "cancel"}), "0") << "handed to the waiter that gave up";
}

}  // namespace
}  // namespace rlock::test
