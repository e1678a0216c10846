#include "support/temp_dir.hpp"

#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace rlock::test {

temp_dir::temp_dir(std::string_view prefix) {
  const char* tmp = std::getenv("TMPDIR");  // NOLINT(concurrency-mt-unsafe): no setenv
  const std::filesystem::path base = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
  std::string pattern = (base / (std::string(prefix) + "-XXXXXX")).string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw std::runtime_error("temp_dir: mkdtemp(" + pattern +
                             ") failed: " + std::generic_category().message(errno));
  }
  path_ = buffer.data();
}

temp_dir::~temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace rlock::test
