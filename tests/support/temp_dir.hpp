// temp_dir: a fresh, private directory for one test fixture.
//
// Guarantees: the constructor creates a new directory with mkdtemp under $TMPDIR (or /tmp if
// TMPDIR is unset or empty), named <prefix>-XXXXXX, or throws std::runtime_error. The destructor
// removes it recursively and never throws.
#pragma once

#include <filesystem>
#include <string_view>

namespace rlock::test {

class temp_dir {
 public:
  explicit temp_dir(std::string_view prefix = "rlock-test");
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace rlock::test
