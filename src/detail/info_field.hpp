// info_field: one `<name>:<value>` line of an INFO reply (INFO replication's connected_slaves,
// INFO memory's maxmemory_policy).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace rlock::detail {

/// The value of `info`'s line `<name>:<value>` (up to its CR or LF), or nullopt when `info` has
/// no line that starts with `name` followed by ':'.
inline std::optional<std::string_view> info_field(std::string_view info, std::string_view name) {
  std::size_t at = 0;
  while ((at = info.find(name, at)) != std::string_view::npos) {
    const std::size_t colon = at + name.size();
    if ((at == 0 || info[at - 1] == '\n') && colon < info.size() && info[colon] == ':') {
      const std::string_view value = info.substr(colon + 1);
      return value.substr(0, value.find_first_of("\r\n"));
    }
    at = colon;
  }
  return std::nullopt;
}

}  // namespace rlock::detail
