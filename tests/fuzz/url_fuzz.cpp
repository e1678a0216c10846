// libFuzzer target: URL parsing. Any input either parses (and renders) or fails with
// errc::invalid_url and a reason; the throwing form never leaks a password.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rlock/config.hpp"
#include "rlock/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view url(reinterpret_cast<const char*>(data), size);  // NOLINT
  std::error_code ec;
  std::string why;
  auto a = rlock::parse_url(url, ec, &why);
  if (a) {
    if (ec) std::abort();
    (void)a->to_string();
    if (a->kind != rlock::server_address::scheme::unix_socket && a->port == 0) std::abort();
  } else if (ec != rlock::errc::invalid_url || why.empty()) {
    std::abort();
  }
  try {
    (void)rlock::parse_url(url);
  } catch (const rlock::error& e) {
    // A password given as user:password@ must never appear in the message.
    const auto at = url.rfind('@');
    const auto colon = url.substr(0, at == std::string_view::npos ? 0 : at).rfind(':');
    if (at != std::string_view::npos && colon != std::string_view::npos && at - colon > 8) {
      const std::string_view password = url.substr(colon + 1, at - colon - 1);
      // Leaked means shown as credentials, "<password>@"; the same bytes may legitimately
      // appear elsewhere (in the host, say).
      const std::string leaked = std::string(password) + "@";
      // A "password" made of the message's own template characters (the quote, the *** mask)
      // can match the template itself: such inputs are not judged.
      if (password.find_first_of(":/@*'") == std::string_view::npos &&
          std::string_view(e.what()).find(leaked) != std::string_view::npos) {
        std::abort();
      }
    }
  }
  return 0;
}
