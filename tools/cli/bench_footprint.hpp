// bench_footprint.hpp: `rlock bench footprint`: resident memory and threads of this process
// with a connected client (a) idle, (b) holding --locks locks (taken with the asynchronous
// API, under the watchdog; released before (c)) and (c) with --waiters threads blocked in
// try_lock_for on one lock the main thread holds. "library_threads" is Threads minus the
// waiting threads minus the main thread: the client's own threads.
//
// The waiters are counted as blocked once each has announced it is about to call try_lock_for
// and a settling time of 200 ms has passed. Then the main thread unlocks and every waiter
// takes and releases the lock in turn.
//
// Guarantees: bounded (locks: 60 s + 1 ms per lock each way; waiters: their wait of 60 s +
// 20 ms per waiter); every thread started is joined; exit 1 when a lock was not taken or
// released, a waiter did not get the lock, a thread could not be started, or a key was left
// behind (then deleted).
#pragma once

#include <CLI/CLI.hpp>

#include "bench_report.hpp"
#include "connection_options.hpp"

namespace rlock::cli {

struct footprint_options {
  int locks = 10000;
  int waiters = 1000;
};

void add_footprint_options(CLI::App& sub, footprint_options& opts);
bench_report run_footprint(const footprint_options& opts, const connection_options& conn);

}  // namespace rlock::cli
