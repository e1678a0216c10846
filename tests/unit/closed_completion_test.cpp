// Completions once the client's io_context takes no more handlers (io_gate closed), and before
// (no server, no client: an io_context and the gate alone).
//
// An io_context whose threads have ended is not always "stopped": its work count reaches 0 a
// moment before it marks itself stopped, and a handler posted in that moment would sit in its
// queue for ever. An io_context that nothing runs and that was never stopped is in the same
// state, so these tests use one: a completion must then go by the gate, not by stopped().
#include "detail/closed_completion.hpp"

#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <future>
#include <rlock/detail/handler_dispatch.hpp>

namespace rlock::detail {
namespace {

using namespace std::chrono_literals;

TEST(closed_completion, post_or_complete_closed_goes_to_the_system_executor_once_closed) {
  asio::io_context io;  // never run, never stopped
  ASSERT_FALSE(io.stopped());
  asio::use_service<io_gate>(io).close();
  std::promise<void> ran;
  post_or_complete_closed(io, [&ran] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(5s), std::future_status::ready);
}

TEST(closed_completion, post_or_complete_closed_posts_to_the_io_context_while_open) {
  asio::io_context io;
  bool ran = false;
  post_or_complete_closed(io, [&ran] { ran = true; });
  EXPECT_FALSE(ran) << "never inline";
  EXPECT_EQ(io.poll(), 1u) << "queued on the io_context";
  EXPECT_TRUE(ran);
}

TEST(closed_completion, a_users_handler_goes_to_the_system_executor_once_closed) {
  asio::io_context io;
  const auto own = io.get_executor();
  asio::use_service<io_gate>(io).close();
  // A strand over the client's io_context is the client's too (found by its context).
  const auto strand = asio::make_strand(io);
  asio::executor_work_guard<decltype(strand)> work(strand);
  std::promise<void> ran;
  dispatch_handler(strand, own, work, [&ran] { ran.set_value(); });
  EXPECT_EQ(ran.get_future().wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(work.owns_work()) << "the work guard is released";
}

TEST(closed_completion, a_users_handler_goes_to_its_executor_while_open) {
  asio::io_context io;
  const auto own = io.get_executor();
  asio::executor_work_guard<asio::io_context::executor_type> work(own);
  bool ran = false;
  dispatch_handler(own, own, work, [&ran] { ran = true; });
  EXPECT_FALSE(ran) << "not on a thread of the io_context: posted, not run here";
  EXPECT_FALSE(work.owns_work());
  io.poll();
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace rlock::detail
