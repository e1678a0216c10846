// Requests queued behind a write that stalled, when their connection drops: none of their bytes
// went out, so they did not run, and the connection sends them on its next link instead of
// failing them with not_connected (which costs each a retry delay). The write they queued
// behind had started: its outcome is unknown, and it fails as such.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <rlock/client.hpp>
#include <rlock/error.hpp>
#include <string>
#include <system_error>
#include <thread>

#include "faults/fault_proxy.hpp"
#include "integration/common.hpp"
#include "support/event_recorder.hpp"
#include "support/fast_config.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

TEST(unwritten_requests, queued_behind_a_stalled_write_go_out_on_the_next_connection) {
  test::redis_server server;
  fault_proxy proxy{server.port()};
  test::event_recorder rec;
  config cfg = test::fast_config(proxy.url());
  cfg.on_event = rec.handler();
  cfg.reconnect_delay_min = 20s;  // a back-off, or a retry's delay, would outlast the test
  cfg.reconnect_delay_max = 20s;
  cfg.retry_delay_base = 20s;
  cfg.retry_delay_max = 20s;
  // Nor may a request's own deadline pass before the drop: the SET's would drop the link (a
  // write stalled past it) and the acquire would go out on the next link, which the test then
  // kills. Under TSan with 4 tests at once, the steps before the drop took more than the
  // default 3 s (4 copies of this test at once under TSan: 5 of 8 runs failed at 3 s, 12 of 12
  // passed at 60 s).
  cfg.timeout = 60s;
  // Declared before the client: if the test stops early, the SET's handler may still run at the
  // client's shutdown.
  std::promise<std::error_code> big_done;
  client c(cfg);
  auto l = c.get_lock("unwritten");
  l.lock();
  l.unlock_or_throw();
  // Up for longer than connection.hpp's stable_link: a drop now is connected again at once.
  std::this_thread::sleep_for(1100ms);

  proxy.set_mode(proxy_mode::freeze_existing);
  const std::uint64_t attempts = c.stats().attempts;
  // More than the frozen link's socket buffers hold (4 MiB to send and 32 MiB to receive at
  // most, Debian's defaults): the write stalls part way, and what comes next queues behind it.
  c.async_execute({"SET", "big", std::string(std::size_t{48} << 20U, 'x')},
                  [&big_done](std::error_code ec, const reply&) { big_done.set_value(ec); });
  auto locked = test::try_lock_then_unlock_async(l, 60s);
  // The acquire has been handed to the connection (attempts counts it as it is). An event, not
  // a bound under test: a 5 s limit ran out under TSan with 4 tests at once.
  ASSERT_TRUE(test::wait_until([&] { return c.stats().attempts == attempts + 2; }, 30s));

  // The link's server side goes; thawed, the proxy finds it closed and closes the client's.
  server.cli({"CLIENT", "KILL", "TYPE", "normal"});
  proxy.set_mode(proxy_mode::pass);
  ASSERT_TRUE(rec.wait_for(client_event_kind::disconnected, 10s)) << rec.kinds();
  const auto t0 = test::steady::now();
  EXPECT_TRUE(locked.get());
  EXPECT_LT(test::ms_since(t0), 2000);
  EXPECT_EQ(big_done.get_future().get(), errc::connection_lost);
  EXPECT_EQ(server.cli({"EXISTS", "big"}), "0");
  EXPECT_EQ(rec.count(client_event_kind::disconnected), 1U) << rec.kinds();
}

}  // namespace
}  // namespace rlock::faults
