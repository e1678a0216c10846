// terminal_text.hpp: text from Redis or the command line made safe for a terminal.
//
// Guarantees: printable() returns its input with every byte a terminal could act on written as
// \xNN (lowercase hex): C0 controls (including \n, \t, ESC) and DEL, the C1 controls U+0080-U+009F
// of valid UTF-8 (each of their two bytes), and each byte of an invalid UTF-8 sequence. Printable
// ASCII and valid UTF-8 otherwise are kept as they are (a backslash too). Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace rlock::cli {

std::string printable(std::string_view bytes);

}  // namespace rlock::cli
