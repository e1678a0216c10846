// The key of a named object (a lock, a semaphore): its name through config::name_mapper,
// checked the same way for every kind.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "detail/cluster_slots.hpp"
#include "detail/core.hpp"
#include "rlock/error.hpp"

namespace rlock::detail {

/// The key of `what` (e.g. "lock") named `name`: throws errc::invalid_argument for an empty name,
/// a name the mapper maps to "", or a key longer than `max_size` bytes (every script sends the
/// key, and its channels' names, several times: with names of many MiB the writes alone would
/// outlast a request timeout, and no deadline could hold); in Cluster mode also for a name whose
/// keys would not share a slot (keeps_one_slot).
inline std::string checked_key(const core& c, const std::string& name, std::string_view what,
                               std::size_t max_size) {
  const auto invalid = [](const std::string& text) {
    return error(make_error_code(errc::invalid_argument), text);
  };
  if (name.empty()) throw invalid(std::string(what) + " name must not be empty");
  std::string key = c.map_name(name);
  if (key.empty()) throw invalid("name_mapper mapped a " + std::string(what) + " name to ''");
  if (key.size() > max_size) {
    throw invalid(std::string(what) + " name of " + std::to_string(key.size()) +
                  " bytes; at most " + std::to_string(max_size));
  }
  if (c.cluster_mode() && !keeps_one_slot(key)) {
    throw invalid(std::string(what) + " name '" + key +
                  "' has a '{' but no hash tag ('{', then at least one character, then '}'): "
                  "in a cluster its keys would fall in different slots");
  }
  return key;
}

}  // namespace rlock::detail
