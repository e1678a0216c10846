// An acquire whose reply arrives after its lease could have run out: a deterministic form of the
// invalid lease the proxy scenario found (a reply held back by a stalled network for longer than
// the lease).
//
// lock.hpp promises that an acquire returns only with a lease deadline ahead: valid_until() is
// "send time of the last successful acquire or renewal plus the lease". A reply that comes later
// than that deadline cannot prove the lock is still the caller's (the server may have applied
// the acquire at once and let the key expire since), so it must not be returned as held.
#include <gtest/gtest.h>

#include <future>
#include <rlock/client.hpp>

#include "faults/fault_proxy.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

TEST(fault_stale_acquire, a_reply_later_than_the_lease_is_not_returned_as_held) {
  test::redis_server server;
  fault_proxy proxy(server.port());
  client c(test::fast_config(proxy.url()));
  rlock::lock l = c.get_lock("stale");
  ASSERT_EQ(c.execute({"PING"}).str(), "PONG");  // connected through the proxy

  // The acquire is held back 400 ms on its way to the server; its lease is 300 ms. Once the
  // proxy has the request, the network heals: the retry that follows the undo goes straight.
  // Everything the owner does runs on one thread (the owner is the calling thread).
  struct outcome {
    bool held = false;
    steady::duration took{};
    steady::duration lease_left{};
    bool lost = false;
    std::string count;
    bool unlocked = false;
  };
  const auto before = proxy.stats().bytes_up;
  proxy.set_mode(proxy_mode::delay, 400ms);
  auto owner = std::async(std::launch::async, [&] {
    outcome out;
    const auto t0 = steady::now();
    out.held = l.try_lock(3s, 300ms);
    const auto returned = steady::now();
    out.took = returned - t0;
    if (!out.held) return out;
    out.lease_left = l.valid_until() - returned;
    out.lost = l.loss_token().stop_requested();
    out.count =
        server.cli({"HGET", "stale", c.id() + ":" + std::to_string(this_thread_owner_id())});
    l.unlock_or_throw();
    out.unlocked = true;
    return out;
  });
  ASSERT_TRUE(test::wait_until([&] { return proxy.stats().bytes_up > before; }, 2s));
  proxy.set_mode(proxy_mode::pass);
  ASSERT_EQ(owner.wait_for(5s), std::future_status::ready) << "try_lock returns by its wait";
  const outcome out = owner.get();
  ASSERT_GE(out.took, 400ms) << "the first reply came after the lease";

  ASSERT_TRUE(out.held) << "the lock is free: the retry after the undo acquires it";
  EXPECT_GT(out.lease_left, 0ms) << "returned as held with its lease already over";
  EXPECT_FALSE(out.lost);
  EXPECT_EQ(out.count, "1") << "counted once: the late acquire was undone, not counted twice";
  EXPECT_TRUE(out.unlocked);
  EXPECT_EQ(server.cli({"EXISTS", "stale"}), "0");
}

}  // namespace
}  // namespace rlock::faults
