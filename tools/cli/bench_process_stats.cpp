#include "bench_process_stats.hpp"

#include <sys/resource.h>

#include <fstream>
#include <sstream>
#include <string>

namespace rlock::cli {

process_status read_process_status() {
  process_status s;
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string name;
    long long value = -1;
    fields >> name >> value;
    if (name == "VmRSS:") s.rss_kib = value;
    if (name == "Threads:") s.threads = value;
  }
  return s;
}

long long process_cpu_ns() {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return 0;
  const auto ns = [](const timeval& t) {
    return static_cast<long long>(t.tv_sec) * 1'000'000'000LL +
           static_cast<long long>(t.tv_usec) * 1000LL;
  };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

}  // namespace rlock::cli
