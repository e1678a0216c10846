// bounded_call.hpp: a blocking call on an rlock::client that takes at most a given time.
//
// Guarantees: call_within(client, bound, f) runs f() on a thread of its own and returns what it
// returns (or rethrows what it throws) as soon as it is done. When `bound` passes first, it
// shuts `client` down (pending and later calls on it and its locks fail at once with
// errc::shutdown), waits for f to end, and throws rlock::error(errc::timeout) "no answer within
// <bound>"; if f completed anyway meanwhile, its result is returned. So neither a server that
// holds a command nor the library's retries (a request that was not written is retried up to
// retry_attempts times, each attempt with its own request timeout) stretch the call beyond
// `bound` (plus the time f takes to see the shutdown). After a timeout the client is shut down
// and serves no further call. Call it from one thread at a time, never from a completion
// handler of `client`.
#pragma once

#include <chrono>
#include <future>
#include <rlock/client.hpp>
#include <type_traits>
#include <utility>

#include "duration.hpp"

namespace rlock::cli {

template <class F>
std::invoke_result_t<F&> call_within(rlock::client& client, std::chrono::milliseconds bound, F f) {
  auto done = std::async(std::launch::async, std::move(f));
  if (done.wait_for(bound) != std::future_status::ready) {
    client.shutdown();
    try {
      return done.get();
    } catch (const rlock::error& e) {
      if (e.code() != rlock::errc::shutdown) throw;
    }
    throw rlock::error(make_error_code(rlock::errc::timeout),
                       "no answer within " + format_duration(bound));
  }
  return done.get();
}

}  // namespace rlock::cli
