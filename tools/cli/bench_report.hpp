// bench_report.hpp: what one `rlock bench` scenario hands back to the command: its JSON object,
// its human-readable text and the invariant checks that failed.
//
// Guarantees: `failures` is empty exactly when every invariant of the scenario held (no lost
// update, no overlap, no failed worker, no key left behind, every lock taken); the command then
// exits 0, otherwise 1. Plain data; not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "bench_json.hpp"

namespace rlock::cli {

struct bench_report {
  json_object json{};
  std::string text{};
  std::vector<std::string> failures{};

  void check(bool ok, const std::string& failure) {
    if (!ok) failures.push_back(failure);
  }
};

}  // namespace rlock::cli
