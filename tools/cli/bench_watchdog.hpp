// bench_watchdog.hpp: `rlock bench watchdog`: N locks held under the watchdog for K renewal
// periods (period = --watchdog-timeout / 3) by one client.
//
// Phases:
//  1. idle: a latency probe (lock with a fixed lease + unlock on its own name, one cycle per
//     millisecond at most) runs for min(period, 3 s) before any lock is held. It also measures
//     the probe's own scripts and CPU time per cycle (nothing else runs then).
//  2. the N locks are taken with the asynchronous API, without a lease (bounded: 60 s + N ms).
//  3. hold: K periods, aligned half a period away from the renewal rounds (which the watchdog
//     runs every period after the first acquire), so the window holds exactly K rounds. During
//     the first K-1 periods only the watchdog works: the process's user+sys CPU time over them
//     is the renewal CPU, and RSS "holding" is read at their end. The probe runs during the
//     last period; its scripts (cycles x scripts per cycle) are subtracted from the
//     EVALSHA/EVAL delta of INFO commandstats over the K periods. With K = 1 there is no quiet
//     period: the CPU is then estimated by subtracting the probe's (cycles x CPU per cycle),
//     and "cpu_estimated" says so.
//  4. every lock is released and the run's keys must be gone.
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
  std::chrono::milliseconds watchdog_timeout{30000};
};

void add_watchdog_options(CLI::App& sub, watchdog_options& opts);
bench_report run_watchdog(const watchdog_options& opts, const connection_options& conn);

}  // namespace rlock::cli
