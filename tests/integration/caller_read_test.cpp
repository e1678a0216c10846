// A blocking caller reads its own reply (connection::poll_replies): the reply is taken and its
// completion run on the calling thread, in stream order, only while every request awaiting a
// reply allows it; the end of the stream seen by a caller fails the request like any other.
//
// These tests drive one connection directly and run its io_context on the test thread only when
// they say so: while they do not, nothing but poll_replies() can read, so what it did is certain.
#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "detail/connection.hpp"
#include "detail/resp.hpp"

namespace rlock::test {
namespace {

using detail::connection;
using detail::exec_result;

// What one request's completion saw.
struct seen {
  bool done = false;
  std::thread::id thread;
  exec_result result;
};

class caller_read : public ::testing::Test {
 protected:
  void SetUp() override {
    detail::connection_options opts;
    opts.address = parse_url(server_.url());
    conn_ = std::make_shared<connection>(io_, opts, connection::handlers{});
    conn_->start();
    run_io_until([&] { return conn_->current_state() == connection::state::ready; });
    ASSERT_EQ(conn_->current_state(), connection::state::ready);
  }

  void TearDown() override {
    conn_->close();
    io_.run_for(100ms);
  }

  /// Submits `args`; the completion records into `out`.
  void submit(const std::vector<std::string_view>& args, bool completes_on_caller, seen& out,
              std::chrono::milliseconds timeout = 10s) {
    detail::request r;
    r.payload = detail::encode_command(args);
    r.deadline = steady::now() + timeout;
    r.completes_on_caller = completes_on_caller;
    r.done = [&out](exec_result res) {
      out.thread = std::this_thread::get_id();
      out.result = std::move(res);
      out.done = true;
    };
    conn_->submit(std::move(r));
  }

  /// Runs the io_context on this thread until `p` holds (at most 10 s).
  template <class P>
  void run_io_until(P p) {
    const auto until = steady::now() + 10s;
    while (!p() && steady::now() < until) io_.run_one_for(10ms);
  }

  /// Calls poll_replies_of_this_thread() until `p` holds (at most 10 s), without running the
  /// io_context. Returns how many calls read something.
  template <class P>
  int poll_until(P p) {
    int reads = 0;
    const auto until = steady::now() + 10s;
    while (!p() && steady::now() < until) {
      if (connection::poll_replies_of_this_thread()) {
        ++reads;
      } else {
        std::this_thread::yield();
      }
    }
    return reads;
  }

  /// A record that outlives the test body (see an_abandoned_...).
  seen& keep() { return kept_.emplace_back(); }

  redis_server server_;
  std::list<seen> kept_;  // before io_ and conn_: destroyed after them
  asio::io_context io_;
  std::shared_ptr<connection> conn_;
};

TEST_F(caller_read, a_blocking_callers_reply_is_read_and_completed_on_its_own_thread) {
  seen ping;
  submit({"PING"}, true, ping);
  const int reads = poll_until([&] { return ping.done; });
  ASSERT_TRUE(ping.done) << "the reply was not read by the polling caller";
  EXPECT_GE(reads, 1);
  EXPECT_EQ(ping.thread, std::this_thread::get_id());
  EXPECT_FALSE(ping.result.ec) << ping.result.detail;
  EXPECT_EQ(ping.result.value.str(), "PONG");

  // Again and again on the same connection (each one written by its caller, as the connection
  // is idle: the tests run no I/O thread that could write a queued one).
  for (int i = 0; i < 100; ++i) {
    seen echo;
    const std::string payload = "e" + std::to_string(i);
    submit({"ECHO", payload}, true, echo);
    poll_until([&] { return echo.done; });
    ASSERT_TRUE(echo.done) << i;
    EXPECT_EQ(echo.thread, std::this_thread::get_id());
    EXPECT_EQ(echo.result.value.str(), payload);
  }
}

TEST_F(caller_read, a_reply_owed_to_an_asynchronous_request_is_left_to_the_io_thread) {
  seen async_one;
  seen blocking_one;
  submit({"ECHO", "first"}, false, async_one);
  submit({"ECHO", "second"}, true, blocking_one);
  // Both replies arrive at once; the caller may not read them while the first one's completion
  // (a user's handler, a lock's state machine) must run on an I/O thread, in reply order.
  const auto until = steady::now() + 200ms;
  while (steady::now() < until) {
    EXPECT_FALSE(connection::poll_replies_of_this_thread());
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_FALSE(async_one.done);
  EXPECT_FALSE(blocking_one.done);

  run_io_until([&] { return async_one.done && blocking_one.done; });
  ASSERT_TRUE(async_one.done);
  ASSERT_TRUE(blocking_one.done);
  EXPECT_EQ(async_one.result.value.str(), "first");
  EXPECT_EQ(blocking_one.result.value.str(), "second");
}

TEST_F(caller_read, an_abandoned_asynchronous_request_does_not_hold_a_caller_back) {
  // The server holds the asynchronous request for 1 s; its deadline ends it after 50 ms. The
  // blocking request is queued behind it and written by the I/O loop, which runs until that
  // deadline, long before the server answers either. (Members, not locals: a failed assertion
  // returns before the connection is closed, and closing completes what is still awaited.)
  seen& async_one = keep();
  seen& blocking_one = keep();
  submit({"BLPOP", "caller-read-empty", "1"}, false, async_one, 50ms);
  submit({"ECHO", "after"}, true, blocking_one);
  run_io_until([&] { return async_one.done; });
  ASSERT_TRUE(async_one.done);
  ASSERT_EQ(async_one.result.ec, errc::timeout) << async_one.result.detail;
  ASSERT_FALSE(blocking_one.done);
  ASSERT_EQ(conn_->current_state(), connection::state::ready);

  // The abandoned request's late reply completes nothing, so the caller may read past it to
  // its own, without the I/O loop.
  poll_until([&] { return blocking_one.done; });
  ASSERT_TRUE(blocking_one.done) << "the caller was held back by the abandoned request";
  EXPECT_FALSE(blocking_one.result.ec) << blocking_one.result.detail;
  EXPECT_EQ(blocking_one.result.value.str(), "after");
}

TEST_F(caller_read, the_end_of_the_stream_seen_by_a_caller_fails_its_request_as_connection_lost) {
  seen blocked;
  submit({"BLPOP", "caller-read-list", "0"}, true, blocked);  // the server keeps it
  EXPECT_FALSE(connection::poll_replies_of_this_thread());
  ASSERT_EQ(server_.cli({"CLIENT", "KILL", "TYPE", "normal"}), "1");
  // The caller meets the closed stream (recv returns 0, again on every later look) but does not
  // fail the request itself: dropping the connection is the strand's, and it fails every
  // request awaiting a reply at once.
  const auto until = steady::now() + 200ms;
  while (steady::now() < until) {
    EXPECT_FALSE(connection::poll_replies_of_this_thread());
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_FALSE(blocked.done);
  run_io_until([&] { return blocked.done; });
  ASSERT_TRUE(blocked.done);
  EXPECT_EQ(blocked.result.ec, errc::connection_lost) << blocked.result.detail;
  EXPECT_TRUE(blocked.result.written);
  EXPECT_NE(blocked.result.detail.find("server closed the connection"), std::string::npos)
      << blocked.result.detail;
}

}  // namespace
}  // namespace rlock::test
