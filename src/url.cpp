// URL parsing for rlock::config addresses.
#include <algorithm>
#include <cctype>
#include <string>

#include "detail/whole_number.hpp"
#include "rlock/config.hpp"
#include "rlock/error.hpp"

namespace rlock {
namespace {

bool fail(std::error_code& ec, std::string* why, std::string reason) {
  ec = make_error_code(errc::invalid_url);
  if (why != nullptr) *why = std::move(reason);
  return false;
}

// RFC 3986 scheme characters (letters, digits, + - .), and short.
bool plausible_scheme(std::string_view scheme) {
  return !scheme.empty() && scheme.size() <= 16 &&
         scheme.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
             "0123456789+-.") == std::string_view::npos;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]);
    const int lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

bool parse_int(std::string_view s, long long lo, long long hi, long long& v) {
  const auto n = detail::parse_whole_number(s, lo, hi);
  if (n) v = *n;
  return n.has_value();
}

bool parse_db(std::string_view s, int& db) {
  long long v = 0;
  if (!parse_int(s, 0, 1LL << 30, v)) return false;
  db = static_cast<int>(v);
  return true;
}

}  // namespace

std::string server_address::to_string() const {
  switch (kind) {
    case scheme::unix_socket:
      return "unix://" + path + (database != 0 ? "?db=" + std::to_string(database) : "");
    case scheme::redis:
    case scheme::rediss: {
      std::string s = kind == scheme::rediss ? "rediss://" : "redis://";
      const bool v6 = host.find(':') != std::string::npos;
      s += v6 ? "[" + host + "]" : host;
      s += ":" + std::to_string(port);
      if (database != 0) s += "/" + std::to_string(database);
      return s;
    }
  }
  return {};
}

std::optional<server_address> parse_url(std::string_view url, std::error_code& ec,
                                        std::string* why) {
  ec.clear();
  server_address a;
  for (char c : url) {
    if (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) {
      fail(ec, why, "URL contains a space or control character");
      return std::nullopt;
    }
  }
  std::string_view rest;
  if (url.starts_with("redis://")) {
    rest = url.substr(8);
  } else if (url.starts_with("rediss://")) {
    a.kind = server_address::scheme::rediss;
    rest = url.substr(9);
  } else if (url.starts_with("unix://")) {
    a.kind = server_address::scheme::unix_socket;
    rest = url.substr(7);
    std::string_view path = rest;
    if (auto q = rest.find('?'); q != std::string_view::npos) {
      path = rest.substr(0, q);
      std::string_view query = rest.substr(q + 1);
      if (!query.starts_with("db=") || !parse_db(query.substr(3), a.database)) {
        // The query is not echoed: in a garbled URL it may hold anything, credentials too.
        fail(ec, why, "unix URL query must be ?db=<number>");
        return std::nullopt;
      }
    }
    if (path.empty() || path.front() != '/') {
      fail(ec, why, "unix URL needs an absolute socket path (unix:///path/to/redis.sock)");
      return std::nullopt;
    }
    a.path = std::string(path);
    return a;
  } else {
    const auto colon = url.find("://");
    const std::string_view scheme = colon == std::string_view::npos ? "" : url.substr(0, colon);
    // Echo the scheme only when it looks like one: text before a "://" in a garbled URL can
    // hold credentials.
    const bool plausible = plausible_scheme(scheme);
    fail(ec, why,
         colon == std::string_view::npos ? "missing scheme: expected redis://, rediss:// or unix://"
         : plausible
             ? "unsupported scheme '" + std::string(scheme) + "': expected redis, rediss or unix"
             : std::string("malformed scheme: expected redis://, rediss:// or unix://"));
    return std::nullopt;
  }
  // userinfo: everything before the last '@' (passwords may contain '@' only percent-encoded,
  // but tolerate a raw one by splitting at the last).
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    std::string_view user = userinfo;
    std::optional<std::string_view> pass;
    if (auto c = userinfo.find(':'); c != std::string_view::npos) {
      user = userinfo.substr(0, c);
      pass = userinfo.substr(c + 1);
    }
    std::string decoded;
    if (!user.empty()) {
      if (!percent_decode(user, decoded)) {
        fail(ec, why, "bad percent-encoding in the user name");
        return std::nullopt;
      }
      a.username = decoded;
    }
    if (pass) {
      if (!percent_decode(*pass, decoded)) {
        fail(ec, why, "bad percent-encoding in the password");
        return std::nullopt;
      }
      a.password = decoded;
    }
  }
  if (rest.find_first_of("?#") != std::string_view::npos) {
    // Not echoed, like the unix query: a garbled URL may hold anything, credentials too.
    fail(ec, why,
         "a redis:// URL takes no query or fragment; the database goes after '/' "
         "(redis://host:6379/2)");
    return std::nullopt;
  }
  std::string_view hostport = rest;
  std::string_view db;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    db = rest.substr(slash + 1);
    if (!db.empty() && !parse_db(db, a.database)) {
      fail(ec, why,
           "database must be a non-negative number after '/', got '" + std::string(db) + "'");
      return std::nullopt;
    }
  }
  std::string_view port;
  if (hostport.starts_with("[")) {
    auto close = hostport.find(']');
    if (close == std::string_view::npos) {
      fail(ec, why, "unterminated '[' in IPv6 host");
      return std::nullopt;
    }
    a.host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        fail(ec, why, "expected ':' after the IPv6 host");
        return std::nullopt;
      }
      port = after.substr(1);
      if (port.empty()) {
        fail(ec, why, "empty port after ':'");
        return std::nullopt;
      }
    }
  } else {
    auto c = hostport.find(':');
    a.host = std::string(hostport.substr(0, c));
    if (c != std::string_view::npos) {
      port = hostport.substr(c + 1);
      if (port.empty()) {
        fail(ec, why, "empty port after ':'");
        return std::nullopt;
      }
    }
  }
  if (a.host.empty()) {
    fail(ec, why, "missing host");
    return std::nullopt;
  }
  for (char c : a.host) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' ||
                    c == '_' || c == ':' || c == '%';
    if (!ok) {
      fail(ec, why, "invalid character '" + std::string(1, c) + "' in host");
      return std::nullopt;
    }
  }
  if (!port.empty()) {
    long long p = 0;
    if (!parse_int(port, 1, 65535, p)) {
      // Quoted only when it is digits: a URL that forgot its '@' ("user:password:host:port")
      // has the password in what was taken for the port.
      const bool digits = std::all_of(port.begin(), port.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c)) != 0;
      });
      fail(ec, why,
           digits ? "port must be a number from 1 to 65535, got '" + std::string(port) + "'"
                  : std::string("port must be a number from 1 to 65535 (is an '@' missing after "
                                "the user and password?)"));
      return std::nullopt;
    }
    a.port = static_cast<std::uint16_t>(p);
  }
  return a;
}

// The URL with any credentials masked, so that error messages never show a password.
namespace {

// Masks everything before the last '@' (after the scheme, when there is one), whatever else is
// malformed, so that a password never reaches a message or a log.
std::string redact(std::string_view url) {
  std::string s(url);
  const auto at = s.rfind('@');
  const auto scheme = s.find("://");
  if (at == std::string::npos) {
    // No '@', but two ':' in the authority outside brackets ("redis://user:password:host:port",
    // the '@' forgotten): whatever follows the first ':' may be a password.
    const std::size_t begin = scheme == std::string::npos ? 0 : scheme + 3;
    const std::size_t end = std::min(s.find_first_of("/?#", begin), s.size());
    const std::string_view authority = std::string_view(s).substr(begin, end - begin);
    if (!authority.starts_with('[') && std::count(authority.begin(), authority.end(), ':') > 1) {
      const std::size_t colon = begin + authority.find(':');
      s.replace(colon + 1, end - colon - 1, "***");
    }
    return s;
  }
  const std::size_t from =
      (scheme != std::string::npos && scheme < at && plausible_scheme(url.substr(0, scheme)))
          ? scheme + 3
          : 0;
  s.replace(from, at - from, "***");
  return s;
}

}  // namespace

server_address parse_url(std::string_view url) {
  std::error_code ec;
  std::string why;
  auto a = parse_url(url, ec, &why);
  if (!a) throw error(ec, "invalid URL '" + redact(url) + "': " + why);
  return *a;
}

}  // namespace rlock
