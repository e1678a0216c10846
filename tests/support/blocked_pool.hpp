// blocked_pool: each of a client's two pooled connections held at the server by a BLPOP, so that
// what the client sends next waits in that connection's query buffer until the test releases it
// (CLIENT UNBLOCK, with an id from blocked_with_pending): the test, not the client, orders the
// server's work.
//
// Declare it before the client: the client's shutdown may complete the BLPOPs, whose callbacks
// set this object's promises. wait() returns once both BLPOPs have completed.
#pragma once

#include <chrono>
#include <future>
#include <rlock/client.hpp>
#include <string_view>
#include <system_error>

#include "support/client_list.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace rlock::test {

class blocked_pool {
 public:
  /// Sends the two BLPOPs (round robin: two requests in a row reach both connections) and
  /// waits up to 5 s until the server lists both connections named `name` as blocked.
  [[nodiscard]] bool block(rlock::client& c, const redis_server& server, std::string_view name) {
    c.async_execute({"BLPOP", "never:a", "30"},
                    [this](std::error_code, const rlock::reply&) { a_done_.set_value(); });
    c.async_execute({"BLPOP", "never:b", "30"},
                    [this](std::error_code, const rlock::reply&) { b_done_.set_value(); });
    return wait_until([&] { return blocked_clients(server, name).size() == 2; },
                      std::chrono::seconds(5));
  }

  /// Waits until both BLPOPs have completed (unblocked, timed out or ended by shutdown).
  void wait() {
    a_done_.get_future().wait();
    b_done_.get_future().wait();
  }

 private:
  std::promise<void> a_done_;
  std::promise<void> b_done_;
};

}  // namespace rlock::test
