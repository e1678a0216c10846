// The background undo of an acquire that gave up, and a later acquire of the same owner: a
// deterministic form of an overlap the proxy scenario shows after drop_replies (public API and
// server commands only).
//
// lock.hpp: "An acquire whose outcome stays unknown is undone in the background." The undo
// releases the owner's hold if the owner's count shows exactly that acquire. The same thread
// is the same owner, so the undo cannot tell that acquire from a later, successful one.
#include <gtest/gtest.h>

#include <future>
#include <rlock/client.hpp>
#include <thread>

#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// Connections the server has for clients named `name` (external state: CLIENT LIST).
long long clients_named(const test::redis_server& server, const std::string& name) {
  const std::string list = server.cli({"CLIENT", "LIST"});
  const std::string tag = " name=" + name + " ";
  long long n = 0;
  for (auto pos = list.find(tag); pos != std::string::npos; pos = list.find(tag, pos + 1)) ++n;
  return n;
}

TEST(fault_acquire_undo, a_stale_undo_does_not_release_a_later_acquire_of_the_same_owner) {
  test::redis_server server;
  client holder(test::fast_config(server.url()));
  rlock::lock theirs = holder.get_lock("undo");
  theirs.lock();

  // The waiter: Redisson's default retry delays, so a request whose attempt failed is retried
  // 1-2 s later.
  config cfg = test::fast_config(server.url());
  cfg.retry_delay_base = 1000ms;
  cfg.retry_delay_max = 2000ms;
  cfg.client_name = "waiter";
  client waiter(cfg);
  rlock::lock mine = waiter.get_lock("undo");
  ASSERT_EQ(waiter.execute({"PING"}).str(), "PONG");

  // The waiter queues and gives up after 500 ms. Its leave (the undo of that acquire) is held
  // back by CLIENT PAUSE WRITE, then its connection is killed: the leave did not run, and is
  // retried 1-2 s later. Everything the waiter does happens on this thread (one owner), as in
  // a worker; the pause comes from another thread once the waiter is queued.
  long long connections = 0;  // the waiter's command and subscriber connections
  auto fault = std::async(std::launch::async, [&] {
    const bool queued = test::wait_until(
        [&] {
          return server.cli_reply({"ZCARD", "rlock_queue:{undo}"}).integer == 1;
        },
        5s);
    connections = clients_named(server, "waiter");
    server.cli({"CLIENT", "PAUSE", "10000", "WRITE"});
    return queued;
  });
  EXPECT_FALSE(mine.try_lock(500ms));
  ASSERT_TRUE(fault.get()) << "the waiter queued";
  std::this_thread::sleep_for(100ms);  // the leave is written, and held by the pause
  server.cli({"CLIENT", "KILL", "TYPE", "normal"});
  server.cli({"CLIENT", "UNPAUSE"});
  ASSERT_EQ(server.cli_reply({"ZCARD", "rlock_queue:{undo}"}).integer, 1) << "not left yet";
  // The client reconnects on its own (reconnect delays 10-100 ms).
  ASSERT_TRUE(test::wait_until([&] { return clients_named(server, "waiter") == connections; }, 2s));

  // The holder unlocks: the lock goes to the queue's head, the waiter's owner. The same thread
  // acquires again: the lock is already its own, so it holds it at once.
  theirs.unlock();
  ASSERT_TRUE(mine.try_lock(2000ms));
  const std::stop_token lost = mine.loss_token();
  const std::string field = waiter.id() + ":" + std::to_string(this_thread_owner_id());
  ASSERT_EQ(server.cli({"HEXISTS", "undo", field}), "1");

  // The retried leave of the first acquire is sent now (1-2 s after it first failed).
  std::this_thread::sleep_for(2500ms);  // observing whether the hold survives it
  const bool deadline_ahead = mine.valid_until() > steady::now();
  const bool told = lost.stop_requested();
  // Found: the retried leave of the first acquire (expected count 1) releases the second one.
  EXPECT_EQ(server.cli({"HEXISTS", "undo", field}), "1")
      << "the undo of the first acquire released the second one (holder's valid_until() ahead: "
      << deadline_ahead << ", loss token stopped: " << told << ")";
  try {
    mine.unlock();
  } catch (const error&) {
  }
}

}  // namespace
}  // namespace rlock::faults
