// libFuzzer target: the CLI's duration parser (tools/cli/duration.hpp), on arbitrary bytes.
// Invariants: it never crashes; an accepted duration lies in [0, max_duration]; a rejected one
// always says why; formatting an accepted duration never crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "duration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string why;
  const auto d = rlock::cli::parse_duration(text, &why);
  if (d) {
    if (d->count() < 0 || *d > rlock::cli::max_duration) std::abort();
    (void)rlock::cli::format_duration(*d);
  } else if (why.empty()) {
    std::abort();
  }
  return 0;
}
