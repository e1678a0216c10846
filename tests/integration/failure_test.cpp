// Dead, paused and restarted servers: errors come within their deadlines, nothing hangs, and the
// client recovers by itself.
#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "common.hpp"
#include "support/wait.hpp"

namespace rlock::test {
namespace {

TEST(failure, paused_server_times_out_within_the_request_timeout) {
  redis_server server;
  config cfg = config_for(server);
  cfg.timeout = 500ms;
  client c(cfg);
  c.execute({"PING"});
  server.pause();
  const auto t0 = steady::now();
  try {
    c.execute({"SET", "k", "v"});
    FAIL() << "expected a timeout";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::timeout) << e.what();
  }
  const auto took = ms_since(t0);
  EXPECT_GE(took, 450);
  EXPECT_LT(took, 500 + 250) << "timeout must fire within its deadline plus a small margin";
  server.resume();
  // The client recovers by itself (it may have dropped the hung connection and reconnected).
  reply r;
  for (int i = 0; i < 50; ++i) {
    try {
      r = c.execute({"PING"});
      break;
    } catch (const error&) {
    }
  }
  EXPECT_EQ(r.str(), "PONG");
}

TEST(failure, killed_server_fails_in_flight_requests_then_client_reconnects) {
  redis_server server;
  config cfg = config_for(server);
  cfg.timeout = 10s;
  client c(cfg);
  c.execute({"PING"});
  std::vector<std::future<std::error_code>> in_flight;
  for (int i = 0; i < 8; ++i) {
    auto p = std::make_shared<std::promise<std::error_code>>();
    in_flight.push_back(p->get_future());
    // Blocks server-side: certainly written and unanswered when the server dies.
    c.async_execute({"BLPOP", "nothing-" + std::to_string(i), "0"},
                    [p](std::error_code ec, reply) { p->set_value(ec); });
  }
  // The first BLPOP blocks the (single, multiplexed) connection; the other seven are written
  // behind it. Wait until the server is blocked on it (observable only from outside).
  ASSERT_TRUE(wait_until(
      [&] {
        return server.cli({"INFO", "clients"}).find("blocked_clients:1") != std::string::npos;
      },
      5s));
  const auto t0 = steady::now();
  server.kill();
  for (auto& f : in_flight) {
    ASSERT_EQ(f.wait_for(2s), std::future_status::ready);
    EXPECT_EQ(f.get(), errc::connection_lost);  // written, outcome unknown: not resent
  }
  EXPECT_LT(ms_since(t0), 1000);
  server.restart();
  reply r;
  for (int i = 0; i < 100; ++i) {
    try {
      r = c.execute({"SET", "after", "restart"});
      break;
    } catch (const error& e) {
      EXPECT_TRUE(e.code() == errc::not_connected || e.code() == errc::connection_refused)
          << e.what();
    }
  }
  EXPECT_EQ(r.str(), "OK");
  EXPECT_EQ(server.cli({"GET", "after"}), "restart");
}

TEST(failure, unreachable_port_is_refused_within_the_retry_budget) {
  std::uint16_t port = 0;
  {
    redis_server doomed;  // take a port that certainly has nothing listening afterwards
    port = doomed.port();
  }
  config cfg;
  cfg.address = "redis://127.0.0.1:" + std::to_string(port);
  cfg.retry_delay_base = 100ms;
  cfg.retry_delay_max = 200ms;
  client c(cfg);
  const auto t0 = steady::now();
  try {
    c.execute({"PING"});
    FAIL() << "expected connection_refused";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), errc::connection_refused) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
  // 4 attempts with 100-200 ms between them.
  EXPECT_LT(ms_since(t0), 1500);
}

TEST(failure, default_config_reports_a_dead_server_within_the_connect_timeout) {
  std::uint16_t port = 0;
  {
    redis_server doomed;
    port = doomed.port();
  }
  config cfg;  // Redisson defaults: 4 attempts, 1-2 s apart
  cfg.address = "redis://127.0.0.1:" + std::to_string(port);
  client c(cfg);
  const auto t0 = steady::now();
  EXPECT_THROW(c.execute({"PING"}), error);
  EXPECT_LT(ms_since(t0), cfg.connect_timeout.count());
}

TEST(failure, malformed_urls_are_rejected_at_construction) {
  for (const char* url :
       {"", "localhost:6379", "http://x:1", "redis://", "redis://h:0", "redis://h:99999",
        "redis://h:6379/x", "unix://relative.sock", "redis://[::1", "redis://ho st:1"}) {
    config cfg;
    cfg.address = url;
    try {
      client c(cfg);
      FAIL() << "accepted " << url;
    } catch (const error& e) {
      EXPECT_EQ(e.code(), errc::invalid_url) << url;
    }
  }
}

TEST(failure, invalid_config_values_are_rejected) {
  config cfg;
  cfg.timeout = 0ms;
  EXPECT_THROW(client{cfg}, error);
  cfg = config{};
  cfg.retry_attempts = 0;
  EXPECT_THROW(client{cfg}, error);
}

// A duration that would overflow steady_clock when added to now (about 292 years in ns) is
// refused at construction; before, a timeout of milliseconds::max() failed every request at once
// and a watchdog timeout of 1000 years made lock() retry for ever.
TEST(failure, config_durations_beyond_a_hundred_years_are_rejected) {
  const auto refused = [](auto set) {
    config cfg;
    set(cfg);
    try {
      client c(cfg);
    } catch (const error& e) {
      return e.code() == errc::invalid_argument;
    }
    return false;
  };
  using years = std::chrono::duration<long long, std::ratio<31556952>>;
  const auto huge = std::chrono::duration_cast<std::chrono::milliseconds>(years(1000));
  EXPECT_TRUE(refused([&](config& c) { c.timeout = huge; }));
  EXPECT_TRUE(refused([](config& c) { c.timeout = std::chrono::milliseconds::max(); }));
  EXPECT_TRUE(refused([&](config& c) { c.lock_watchdog_timeout = huge; }));
  EXPECT_TRUE(refused([&](config& c) { c.lock_queue_liveness = huge; }));
  EXPECT_TRUE(refused([&](config& c) { c.subscription_timeout = huge; }));
  EXPECT_TRUE(refused([&](config& c) { c.connect_timeout = huge; }));
  EXPECT_TRUE(refused([](config& c) { c.retry_attempts = 10001; }));
  EXPECT_TRUE(refused([&](config& c) { c.wait_recheck_interval = huge; }));
  EXPECT_TRUE(refused([](config& c) { c.wait_recheck_interval = -1ms; }));
  EXPECT_TRUE(refused([](config& c) { c.wait_recheck_interval = 5ms; }));
}

}  // namespace
}  // namespace rlock::test
