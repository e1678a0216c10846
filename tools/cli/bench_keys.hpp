// bench_keys.hpp: the keys of one `rlock bench` run. Every run uses a fresh random prefix, so
// runs never see each other's locks and the run can check that it left nothing behind.
//
// Guarantees:
//  - bench_prefix() is "rlock-bench:<16 hex digits>:", random per call.
//  - run_keys() lists the keys whose name contains the prefix (the locks, the counter, and
//    the queue keys "rlock_queue:{<name>}" of queued locks), by SCAN: bounded by the size of
//    the keyspace (and at most 10^6 SCAN calls), never KEYS. delete_run_keys() deletes them
//    and returns how many existed. Both throw rlock::error.
//  - clean_up_run() counts what a finished run left, then deletes it all. Redisson's unlock
//    latches ("redisson_unlock_latch:{<name>}:<id>", which make a resent unlock idempotent and
//    expire by themselves) are counted apart: they are expected after every unlock; so are the
//    fencing token counters of fenced runs ("redisson_lock_token:{<name>}", never deleted by
//    design); anything else left is a leak.
#pragma once

#include <string>
#include <vector>

namespace rlock {
class client;
}

namespace rlock::cli {

std::string bench_prefix();
std::vector<std::string> run_keys(rlock::client& c, const std::string& prefix);
long long delete_run_keys(rlock::client& c, const std::string& prefix);

struct run_leftovers {
  long long keys = 0;            ///< anything but unlock latches: must be 0
  long long unlock_latches = 0;  ///< expected, expiring
  long long token_counters = 0;  ///< expected after a fenced run, kept by design
};
run_leftovers clean_up_run(rlock::client& c, const std::string& prefix);

}  // namespace rlock::cli
