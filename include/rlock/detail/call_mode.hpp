// Internal to the public headers: where a lock call's work runs and where it completes.
#pragma once

namespace rlock::detail {

/// How one call of a lock runs. The async API's calls are `async`; a blocking call is one of the
/// other two, as detail::blocking_plan decides when the call starts.
enum class call_mode {
  /// Started on the calling thread, completed on one of the client's I/O threads.
  async,
  /// Started on the calling thread, which then waits there and may read its own reply and
  /// complete the call itself (detail::connection::poll_replies).
  blocking_on_caller,
  /// Posted to one of the client's I/O threads, which starts the work, reads the reply and
  /// completes the call while the caller sleeps. A wait's deadline still counts from the call.
  blocking_posted,
};

}  // namespace rlock::detail
