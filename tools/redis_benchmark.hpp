// Runs redis-benchmark against a server and reads its --csv summary: the ceiling that rlock's
// figures are quoted against, measured in the same run on the same server.
#pragma once

#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rlock::tools {

struct redis_benchmark_result {
  double rps = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

/// `args` are appended to `redis-benchmark -h host -p port --csv`. Parses the last CSV row.
inline redis_benchmark_result run_redis_benchmark(const std::string& host, int port,
                                                  const std::string& args) {
  const std::string cmd = "redis-benchmark -h " + host + " -p " + std::to_string(port) + " --csv " +
                          args + " 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");  // NOLINT(cert-env33-c): fixed command line
  if (p == nullptr) throw std::runtime_error("cannot run redis-benchmark");
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  if (::pclose(p) != 0) throw std::runtime_error("redis-benchmark failed: " + cmd);
  std::istringstream lines(out);
  std::string line;
  std::string last;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.rfind("\"test\"", 0) != 0) last = line;
  }
  // "name","rps","avg","min","p50","p95","p99","max" -- the name may contain commas.
  std::vector<std::string> fields;
  std::string cur;
  bool quoted = false;
  for (char c : last) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  fields.push_back(cur);
  if (fields.size() < 8) throw std::runtime_error("unexpected redis-benchmark output: " + out);
  return {std::stod(fields[1]), std::stod(fields[4]), std::stod(fields[6])};
}

}  // namespace rlock::tools
