#include "redisson_names.hpp"

namespace rlock::cli::redisson {

std::string prefix_name(std::string_view prefix, std::string_view key) {
  std::string out(prefix);
  if (key.find('{') != std::string_view::npos) {
    out += ':';
    out += key;
  } else {
    out += ":{";
    out += key;
    out += '}';
  }
  return out;
}

std::string suffix_name(std::string_view key, std::string_view suffix) {
  std::string out;
  if (key.find('{') != std::string_view::npos) {
    out = key;
  } else {
    out = "{";
    out += key;
    out += '}';
  }
  out += ':';
  out += suffix;
  return out;
}

}  // namespace rlock::cli::redisson
