// eviction_warning: what a `connected` event says of a server that may evict held locks under
// memory pressure (client_event_kind::connected; lock.hpp, "Memory").
#pragma once

#include <string>
#include <string_view>

#include "detail/info_field.hpp"

namespace rlock::detail {

/// The warning for an INFO memory reply: its maxmemory_policy when that is not noeviction;
/// empty for noeviction, and when the reply does not tell (no such line, an empty value).
inline std::string eviction_warning(std::string_view info_memory) {
  const auto policy = info_field(info_memory, "maxmemory_policy");
  if (!policy || policy->empty() || *policy == "noeviction") return {};
  return "maxmemory-policy is " + std::string(*policy) +
         ": under memory pressure the server may evict keys, held locks included (noeviction "
         "keeps them)";
}

}  // namespace rlock::detail
