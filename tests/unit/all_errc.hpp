// Every rlock::errc value, for the unit tests that check a property of each (error_test.cpp,
// retry_test.cpp). errc counts from 1 without gaps; the last value is named here, so a new one
// added after it must be named here too (error_test fails when the value after the last one
// named here has a message of its own).
#pragma once

#include <rlock/error.hpp>
#include <vector>

namespace rlock::test {

inline std::vector<errc> all_errc() {
  std::vector<errc> v;
  for (int i = static_cast<int>(errc::invalid_argument);
       i <= static_cast<int>(errc::cluster_redirect); ++i) {
    v.push_back(static_cast<errc>(i));
  }
  return v;
}

}  // namespace rlock::test
