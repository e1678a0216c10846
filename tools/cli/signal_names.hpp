// signal_names.hpp: signal names for options and messages.
//
// parse_signal accepts "TERM", "SIGTERM", "term" and numbers ("15"); it returns std::nullopt
// for anything that is not a signal of this system (1 .. SIGRTMIN-1). signal_name(15) is
// "SIGTERM". Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rlock::cli {

std::optional<int> parse_signal(std::string_view text);
std::string signal_name(int sig);

}  // namespace rlock::cli
