// The undo of an acquire whose outcome is unknown, when the server cannot be reached for longer
// than the undo's own attempts: the acquire was applied (its reply lost), so the lock is held on
// the server by an owner that no longer waits for it. Nobody renews or releases that hold; other
// clients would wait out its whole lease. The undo is sent again, round after round, until it
// lands, until no hold of that acquire can be left (its lease has passed), or, when the client
// closes, one last time.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <rlock/client.hpp>
#include <system_error>
#include <thread>

#include "faults/fault_proxy.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// A client through a proxy, with one attempt per request (a round of the undo is one attempt)
// and `retry_delay` between rounds.
struct cut_off {
  test::redis_server server;
  fault_proxy proxy{server.port()};
  std::unique_ptr<client> c;
  std::unique_ptr<rlock::lock> l;

  explicit cut_off(bool lock_queue, std::chrono::milliseconds retry_delay) {
    config cfg = test::fast_config(proxy.url());
    cfg.timeout = 500ms;
    cfg.connect_timeout = 500ms;
    cfg.retry_attempts = 1;
    cfg.retry_delay_base = retry_delay;
    cfg.retry_delay_max = retry_delay * 2;
    cfg.lock_queue = lock_queue;
    c = std::make_unique<client>(cfg);
    l = std::make_unique<rlock::lock>(c->get_lock("cut"));
    // Connected, and subscribed as far as an uncontended lock ever is.
    EXPECT_TRUE(l->try_lock(2s, 60s));
    l->unlock_or_throw();
  }

  // The acquire is applied and its reply swallowed with its connection; every later connection
  // loses its setup the same way, so neither a resend nor the undo gets through. The caller's
  // wait ends with the outcome unknown; the undo's first round fails.
  void acquire_applied_then_cut_off() {
    proxy.set_mode(proxy_mode::drop_replies);
    std::error_code ec;
    bool held = false;
    try {
      held = l->try_lock(800ms, 60s);  // an explicit lease: nothing renews it
    } catch (const error& e) {
      ec = e.code();
    }
    EXPECT_FALSE(held);
    EXPECT_TRUE(ec == errc::timeout || ec == errc::connection_lost || ec == errc::not_connected)
        << ec.message();
    // The server is unreachable for several rounds of the undo before (one attempt, at most
    // 500 ms, each): with the undo given up after one round, the hold would stay.
    std::this_thread::sleep_for(1500ms);
    ASSERT_EQ(server.cli({"EXISTS", "cut"}), "1") << "the acquire was not applied";
  }
};

void an_undo_goes_out_again_once_the_server_is_back(bool lock_queue) {
  cut_off s(lock_queue, 100ms);
  ASSERT_NO_FATAL_FAILURE(s.acquire_applied_then_cut_off());
  s.proxy.set_mode(proxy_mode::pass);
  // Rounds are 100-200 ms apart: once one gets through, the hold is gone (its lease: 60 s).
  EXPECT_TRUE(test::wait_until(
      [&] {
        return s.server.cli({"EXISTS", "cut"}) == "0";
      },
      10s))
      << "the applied acquire is still held, for its lease, by an owner that gave up";
  // The owner is unharmed: its next acquire goes through.
  ASSERT_TRUE(s.l->try_lock(2s, 60s));
  s.l->unlock_or_throw();
  EXPECT_EQ(s.server.cli({"EXISTS", "cut"}), "0");
}

TEST(fault_undo_retry, an_undo_goes_out_again_once_the_server_is_back) {
  an_undo_goes_out_again_once_the_server_is_back(true);
}

TEST(fault_undo_retry, without_the_queue_an_undo_goes_out_again_once_the_server_is_back) {
  an_undo_goes_out_again_once_the_server_is_back(false);
}

// The next round is 20-40 s away when the owner acquires the lock again: the acquire waits for
// the undo (whose count check would otherwise match it), and the round goes out at once.
TEST(fault_undo_retry, the_owners_next_acquire_sends_a_waiting_undo_at_once) {
  cut_off s(true, 20s);
  ASSERT_NO_FATAL_FAILURE(s.acquire_applied_then_cut_off());
  s.proxy.set_mode(proxy_mode::pass);
  ASSERT_TRUE(test::wait_until([&] { return s.c->status().connected; }, 5s));
  const auto t0 = steady::now();
  ASSERT_TRUE(s.l->try_lock(10s, 60s));
  EXPECT_LT(steady::now() - t0, 2s) << "the acquire waited for the undo's next round";
  EXPECT_EQ(s.l->hold_count(), 1);
  s.l->unlock_or_throw();
  EXPECT_EQ(s.server.cli({"EXISTS", "cut"}), "0") << "the undone acquire's hold is left";
}

// The next round is 20-40 s away when the client closes: closing sends it at once, within the
// close's bound (one request timeout), instead of leaving the hold for its lease.
TEST(fault_undo_retry, a_client_closing_sends_a_waiting_undo_at_once) {
  cut_off s(true, 20s);
  ASSERT_NO_FATAL_FAILURE(s.acquire_applied_then_cut_off());
  s.proxy.set_mode(proxy_mode::pass);
  ASSERT_TRUE(test::wait_until([&] { return s.c->status().connected; }, 5s));
  const auto t0 = steady::now();
  s.l.reset();
  s.c.reset();
  EXPECT_LT(steady::now() - t0, 2s) << "closing waited for the undo's next round";
  EXPECT_EQ(s.server.cli({"EXISTS", "cut"}), "0")
      << "the applied acquire is still held, for its lease, by an owner that gave up";
}

}  // namespace
}  // namespace rlock::faults
