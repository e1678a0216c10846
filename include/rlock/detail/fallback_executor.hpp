// Internal to the public headers: where completions run once a client's threads are gone.
#pragma once

#include <asio/io_context.hpp>

namespace rlock::detail {

/// The executor of the library's fallback context: one io_context, process-wide, run by twice
/// as many threads as the machine has cores, which the library starts at the first use and
/// never joins (detached; the context is never destroyed). Completions of work that a
/// shut-down client refuses run there, as do a multi lock's pauses between rounds. A fork()
/// child, which has none of its parent's threads, gets a context of its own at its first use:
/// there run the completions of the calls it makes on a client its parent made (refused).
///
/// Not Asio's system executor: its thread pool is joined when the process exits, and in a
/// fork() child, whose copy of it names threads that only the parent has, that join never
/// returns, so a child of a process that had used it hung in exit(). Nothing joins this one.
asio::io_context::executor_type fallback_executor();

}  // namespace rlock::detail
