// A server that answers nothing (issue #7, bad input): a listener of our own that accepts and
// reads but never replies, one that accepts and never even reads, and a real Redis that stops
// (SIGSTOP) while a command larger than the socket buffers is being written. Every call ends
// with timeout within the deadline its config implies; none hangs; the client recovers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common.hpp"
#include "hostile_common.hpp"
#include "support/loopback_listener.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

class hostile_silent : public ::testing::TestWithParam<listener_behaviour> {};

TEST_P(hostile_silent, every_call_times_out_within_its_deadline) {
  loopback_listener server(GetParam());
  const config cfg = config_for_listener(server.url(), 300ms);
  const auto t0 = steady::now();
  client c(cfg);
  EXPECT_LT(ms_since(t0), cfg.connect_timeout.count()) << "construction does not block";

  const outcome ping = run_bounded([&] { return c.execute({"PING"}).str() == "PONG"; });
  EXPECT_EQ(ping.ec, errc::timeout) << ping.what;
  EXPECT_GE(ping.took, cfg.timeout.count() - 5) << "no reason to fail before the deadline";
  EXPECT_LT(ping.took, retry_budget(cfg).count());

  // 1 MiB names: more than the never_read listener's buffers take.
  auto timed_lock = c.get_lock(std::string(1 << 20, 'w'));
  const auto wait = 800ms;
  const outcome timed = run_bounded([&] { return timed_lock.try_lock(wait); });
  EXPECT_FALSE(timed.value);
  EXPECT_EQ(timed.ec, errc::timeout) << timed.ec.message();
  EXPECT_LT(timed.took, (wait + slack).count()) << "the wait budget bounds every step";

  // Without a wait budget: the acquire script's own retry budget bounds it.
  auto unbounded_lock = c.get_lock(std::string(1 << 20, 'u'));
  const outcome unbounded = run_bounded([&] {
    unbounded_lock.lock();
    return true;
  });
  EXPECT_EQ(unbounded.ec, errc::timeout) << unbounded.ec.message();
  EXPECT_LT(unbounded.took, retry_budget(cfg).count());
  // The semaphore's: a waiting acquire by its wait, a release by the retry budget.
  auto sem = c.get_semaphore(std::string(1 << 20, 's'));
  const outcome waited = run_bounded([&] { return sem.try_acquire_for(wait); });
  EXPECT_FALSE(waited.value);
  EXPECT_EQ(waited.ec, errc::timeout) << waited.what;
  EXPECT_LT(waited.took, (wait + slack).count());
  const outcome released = run_bounded([&] { return sem.release() > 0; });
  EXPECT_EQ(released.ec, errc::timeout) << released.what;
  EXPECT_LT(released.took, retry_budget(cfg).count());
  // The permit-expirable semaphore's: a waiting acquire by its wait, a release by the retry
  // budget.
  auto pes = c.get_permit_expirable_semaphore(std::string(1 << 20, 'p'));
  const outcome leased = run_bounded([&] { return pes.try_acquire_for(wait, 10s).has_value(); });
  EXPECT_FALSE(leased.value);
  EXPECT_EQ(leased.ec, errc::timeout) << leased.what;
  EXPECT_LT(leased.took, (wait + slack).count());
  const outcome given_back = run_bounded([&] { return pes.try_release(std::string(32, 'a')); });
  EXPECT_EQ(given_back.ec, errc::timeout) << given_back.what;
  EXPECT_LT(given_back.took, retry_budget(cfg).count());
  // The spin lock's wait, by its wait.
  auto spin = c.get_spin_lock(std::string(1 << 20, 'q'));
  const outcome spun = run_bounded([&] { return spin.try_lock(wait); });
  EXPECT_FALSE(spun.value);
  EXPECT_EQ(spun.ec, errc::timeout) << spun.what;
  EXPECT_LT(spun.took, (wait + slack).count());
  // The countdown latch's: a wait by its wait, a count down by the retry budget.
  auto latch = c.get_countdown_latch(std::string(1 << 20, 'l'));
  const outcome awaited = run_bounded([&] { return latch.await_for(wait); });
  EXPECT_EQ(awaited.ec, errc::timeout) << awaited.what;
  EXPECT_LT(awaited.took, (wait + slack).count());
  const outcome counted = run_bounded([&] { return latch.count_down() >= 0; });
  EXPECT_EQ(counted.ec, errc::timeout) << counted.what;
  EXPECT_LT(counted.took, retry_budget(cfg).count());
  // The read-write lock's: a waiting acquire by its wait, force_unlock (never resent) by the
  // retry budget.
  auto rw = c.get_read_write_lock(std::string(1 << 20, 'r'));
  const outcome shared = run_bounded([&] { return rw.try_lock_shared_for(wait); });
  EXPECT_FALSE(shared.value);
  EXPECT_EQ(shared.ec, errc::timeout) << shared.what;
  EXPECT_LT(shared.took, (wait + slack).count());
  const outcome forced = run_bounded([&] { return rw.force_unlock(); });
  EXPECT_EQ(forced.ec, errc::timeout) << forced.what;
  EXPECT_LT(forced.took, retry_budget(cfg).count());
  EXPECT_GE(server.accepted(), 1U);
  if (GetParam() == listener_behaviour::silent) {
    EXPECT_GT(server.bytes_read(), 0U) << "the client did send its connection setup";
  }
}

// A connect timeout says which step it cut short: a TLS handshake that never ends (a plaintext
// port, say) reads differently from a server that accepted the connection and then answered
// nothing, and from a host that never completes the TCP handshake (one that drops packets), so
// that a user can tell them apart. client::status() reports the same failure while it lasts.
TEST(hostile_silent_connect, a_connect_timeout_names_the_step_it_cut_short) {
  loopback_listener silent(listener_behaviour::silent);
  loopback_listener never_accepting(listener_behaviour::never_accept);
  const auto tls_url_of = [](const loopback_listener& l) {
    return "rediss://127.0.0.1:" + std::to_string(l.port());
  };
  struct case_t {
    std::string url;
    const char* step;
  };
  const std::vector<case_t> cases = {
      {silent.url(), "with no answer to its setup commands"},
      {tls_url_of(silent), "in the TLS handshake"},
      {never_accepting.url(), "before the connection was accepted"},
      {tls_url_of(never_accepting), "before the connection was accepted"},
  };
  for (const case_t& k : cases) {
    SCOPED_TRACE(k.url);
    config cfg = config_for_listener(k.url, 5000ms);
    cfg.connect_timeout = 300ms;
    cfg.retry_attempts = 1;
    cfg.tls.verify_peer = false;
    client c(cfg);
    const outcome ping = run_bounded([&] { return c.execute({"PING"}).str() == "PONG"; });
    EXPECT_EQ(ping.ec, errc::timeout) << ping.what;
    EXPECT_NE(ping.what.find("timed out"), std::string::npos) << ping.what;
    EXPECT_NE(ping.what.find(k.step), std::string::npos) << ping.what;
    const connection_status st = c.status();
    EXPECT_FALSE(st.connected);
    EXPECT_EQ(st.error, errc::timeout) << st.error.message();
    EXPECT_NE(st.detail.find(k.step), std::string::npos) << st.detail;
  }
}

// Between connects, a request fails at once with why the last connect failed. Against a silent
// server that is timeout, as it is for a request that waits through a connect: whichever moment a
// request meets the silent server, it reads the same (before, one that came in the back-off read
// not_connected, and lock() against a silent server ended with either, by timing).
TEST(hostile_silent_connect, a_request_in_the_back_off_after_a_silent_connect_reads_timeout) {
  loopback_listener silent(listener_behaviour::silent);
  config cfg = config_for_listener(silent.url(), 5000ms);
  cfg.connect_timeout = 200ms;
  cfg.reconnect_delay_min = 60000ms;  // the back-off outlasts the test: no connect under way
  cfg.reconnect_delay_max = 60000ms;
  cfg.retry_attempts = 1;
  client c(cfg);
  // The client's only event for its link is its status: a snapshot, polled.
  ASSERT_TRUE(wait_until([&] { return c.status().error == errc::timeout; }, hang_limit / 2))
      << "the first connect ended with " << c.status().error.message();
  const outcome ping = run_bounded([&] { return c.execute({"PING"}).str() == "PONG"; });
  EXPECT_EQ(ping.ec, errc::timeout) << ping.what;
  EXPECT_NE(ping.what.find("with no answer to its setup commands"), std::string::npos) << ping.what;
  EXPECT_LT(ping.took, cfg.connect_timeout.count()) << "failed at once, no connect waited for";
}

INSTANTIATE_TEST_SUITE_P(behaviours, hostile_silent,
                         ::testing::Values(listener_behaviour::silent,
                                           listener_behaviour::never_read),
                         [](const auto& param_info) {
                           return param_info.param == listener_behaviour::silent ? "silent"
                                                                                 : "never_read";
                         });

// A failed acquire is cleaned up by an undo script; the same owner's next acquire of the same
// lock waits for that undo to land (so the undo cannot release it), and its wait budget still
// bounds it: against this silent server try_lock(800ms) returns timeout by its deadline.
TEST(hostile_silent_retry, an_acquire_after_a_failed_one_still_returns_by_its_deadline) {
  loopback_listener server(listener_behaviour::silent);
  const config cfg = config_for_listener(server.url(), 300ms);
  client c(cfg);
  auto l = c.get_lock("again");
  const outcome first = run_bounded([&] {
    l.lock();
    return true;
  });
  EXPECT_EQ(first.ec, errc::timeout);
  const auto wait = 800ms;
  const outcome second = run_bounded([&] { return l.try_lock(wait); });
  EXPECT_FALSE(second.value);
  EXPECT_EQ(second.ec, errc::timeout) << second.ec.message();
  EXPECT_LT(second.took, (wait + slack).count());
}

TEST(hostile_stalled, a_write_larger_than_the_socket_buffers_to_a_stopped_server_times_out) {
  redis_server server;
  config cfg = config_for(server);
  cfg.timeout = 500ms;
  client c(cfg);
  c.execute({"PING"});
  // 32 MiB: the write cannot finish. Built before the clock starts: the bound is the call's,
  // and under ThreadSanitizer building the string alone took 300-420 ms.
  const std::vector<std::string> big_set{"SET", "big", std::string(32 << 20, 'b')};
  server.pause();
  const outcome big = run_bounded([&] {
    c.execute(big_set);
    return true;
  });
  EXPECT_EQ(big.ec, errc::timeout) << big.what;
  EXPECT_LT(big.took, (cfg.timeout + slack).count());
  server.resume();
  // The half-written command poisoned that connection; the client drops it and reconnects.
  const outcome after = run_bounded([&] { return c.execute({"SET", "small", "v"}).str() == "OK"; });
  EXPECT_TRUE(after.value) << after.what;
  EXPECT_EQ(server.cli({"GET", "small"}), "v");
}

}  // namespace
}  // namespace rlock::test
