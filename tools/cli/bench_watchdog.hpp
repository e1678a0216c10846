// bench_watchdog.hpp: `rlock bench watchdog`: N locks held under the watchdog for K renewal
// periods (period = --watchdog-timeout / 3) by one client.
//
// Phases:
//  1. idle: a latency probe (lock with a fixed lease + unlock on its own name, back to back)
//     runs for 3 s before any lock is held. It also measures the probe's own scripts per
//     cycle (nothing else runs then).
//  2. the N locks are taken with the asynchronous API, without a lease (bounded: 60 s + N ms).
//  3. hold: K periods, aligned 3/4 of a period after a renewal round (the watchdog runs one
//     every period after the first acquire), so the window holds exactly K rounds and nothing
//     but the watchdog works in it: the EVALSHA/EVAL delta of INFO commandstats over them is
//     the renewal scripts, the process's user+sys CPU time the renewal CPU, and RSS "holding"
//     is read at their end.
//  4. for each of the next R rounds, the probe runs from a quarter period before it until the
//     server has run all of its scripts (beyond the probe's own): the cycles that overlap the
//     round give the latency while renewals run, those before its first script the baseline
//     next to it (the locks held, same machine load); the ratio is of their p99s.
//  5. every lock is released and the run's keys must be gone.
// The probe's lock has a fixed lease, so the watchdog never renews it.
//
// Guarantees: bounded by the phases above; exit 1 when a lock was not taken or released, or a
// key was left behind (then deleted).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>

#include "bench_report.hpp"
#include "connection_options.hpp"

namespace rlock::cli {

struct watchdog_options {
  int locks = 10000;
  int periods = 3;
  int rounds = 3;
  std::chrono::milliseconds watchdog_timeout{30000};
};

void add_watchdog_options(CLI::App& sub, watchdog_options& opts);
bench_report run_watchdog(const watchdog_options& opts, const connection_options& conn);

}  // namespace rlock::cli
