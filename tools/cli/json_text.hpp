// json_text.hpp: JSON string literals from arbitrary bytes.
//
// Guarantees: json_quote() returns a valid JSON string literal (RFC 8259) for any input: '"',
// '\\' and control characters are escaped, valid UTF-8 is kept as is, and each byte of an
// invalid UTF-8 sequence becomes U+FFFD (Redis keys and hash fields are binary-safe; JSON text
// must be UTF-8). Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rlock::cli {

std::string json_quote(std::string_view bytes);

/// Length of the valid UTF-8 sequence starting at s[i] (i < s.size()), or 0 if it is invalid
/// (overlong forms, surrogates and code points above U+10FFFF are invalid).
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

}  // namespace rlock::cli
