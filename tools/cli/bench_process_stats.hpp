// bench_process_stats.hpp: the resources of the rlock process itself, for `rlock bench`:
// resident memory and thread count (/proc/self/status) and CPU time (getrusage).
//
// Guarantees: read_process_status() returns VmRSS in KiB and Threads as the kernel reports
// them at the call, or -1 for a field it cannot read (not Linux). process_cpu_ns() is user +
// system CPU time of all threads of the process so far. Thread-safe.
#pragma once

namespace rlock::cli {

struct process_status {
  long long rss_kib = -1;
  long long threads = -1;
};

process_status read_process_status();
long long process_cpu_ns();

}  // namespace rlock::cli
