#include "terminal_text.hpp"

#include "json_text.hpp"

namespace rlock::cli {
namespace {

void append_hex(std::string& out, unsigned char c) {
  constexpr const char* digits = "0123456789abcdef";
  out += "\\x";
  out += digits[c >> 4];
  out += digits[c & 0xF];
}

}  // namespace

std::string printable(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c < 0x20 || c == 0x7F) {
      append_hex(out, c);
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(bytes, i);
    const bool c1_control = n == 2 && c == 0xC2 && static_cast<unsigned char>(bytes[i + 1]) < 0xA0;
    if (n == 0 || c1_control) {
      for (std::size_t k = 0; k < (n == 0 ? 1 : n); ++k) {
        append_hex(out, static_cast<unsigned char>(bytes[i + k]));
      }
      i += n == 0 ? 1 : n;
      continue;
    }
    out.append(bytes.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace rlock::cli
