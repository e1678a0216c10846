#include "detail/cluster_slots.hpp"

#include <array>

#include "detail/whole_number.hpp"

namespace rlock::detail {
namespace {

// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection (Redis's crc16.c).
constexpr std::array<std::uint16_t, 256> crc16_table = [] {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    unsigned crc = i << 8;
    for (int b = 0; b < 8; ++b) crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
    t[i] = static_cast<std::uint16_t>(crc & 0xffff);
  }
  return t;
}();

std::uint16_t crc16(std::string_view s) {
  std::uint16_t crc = 0;
  for (const char ch : s) {
    const auto byte = static_cast<unsigned char>(ch);
    crc = static_cast<std::uint16_t>((crc << 8) ^ crc16_table[((crc >> 8) ^ byte) & 0xff]);
  }
  return crc;
}

std::optional<std::uint16_t> parse_port(std::string_view text) {
  const auto v = parse_whole_number(text, 1, 65535);
  if (!v) return std::nullopt;
  return static_cast<std::uint16_t>(*v);
}

/// "host:port", "[v6]:port" or "v6:port" (split at the last colon).
std::optional<cluster_endpoint> parse_endpoint(std::string_view text, std::string_view asked) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  const auto port = parse_port(text.substr(colon + 1));
  if (!port) return std::nullopt;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.find_first_of(" []") != std::string_view::npos) return std::nullopt;
  return cluster_endpoint{std::string(host.empty() ? asked : host), *port};
}

bool fail(std::string* why, std::string text) {
  if (why != nullptr) *why = std::move(text);
  return false;
}

}  // namespace

std::uint16_t key_slot(std::string_view key) {
  const auto open = key.find('{');
  if (open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return static_cast<std::uint16_t>(crc16(key) % cluster_slot_count);
}

bool keeps_one_slot(std::string_view name) {
  const auto open = name.find('{');
  if (open == std::string_view::npos) return true;
  const auto close = name.find('}', open + 1);
  return close != std::string_view::npos && close > open + 1;
}

std::string cluster_endpoint::name() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<std::vector<slot_range>> parse_cluster_slots(reply_view r,
                                                           std::string_view asked_host,
                                                           std::string* why) {
  if (!r.is_array()) {
    fail(why, "CLUSTER SLOTS did not answer an array: " + r.to_string());
    return std::nullopt;
  }
  std::vector<slot_range> out;
  out.reserve(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    const reply_view e = r[i];
    const auto bad = [&](const std::string& what) {
      fail(why, "CLUSTER SLOTS entry " + std::to_string(i) + ": " + what);
      return std::nullopt;
    };
    if (!e.is_array() || e.size() < 3 || !e[0].is_integer() || !e[1].is_integer() ||
        !e[2].is_array() || e[2].size() < 2) {
      return bad("not [first, last, [host, port, ...], ...]");
    }
    const long long first = e[0].integer();
    const long long last = e[1].integer();
    if (first < 0 || last >= cluster_slot_count || first > last) {
      return bad("slots " + std::to_string(first) + "-" + std::to_string(last) + " out of range");
    }
    const reply_view m = e[2];
    if (!m[0].is_string() || !m[1].is_integer() || m[1].integer() < 1 || m[1].integer() > 65535) {
      return bad("master is not [host, port, ...]");
    }
    std::string_view host = m[0].str();
    if (host.empty() || host == "?") host = asked_host;
    slot_range s;
    s.first = static_cast<std::uint16_t>(first);
    s.last = static_cast<std::uint16_t>(last);
    s.master = {std::string(host), static_cast<std::uint16_t>(m[1].integer())};
    out.push_back(std::move(s));
  }
  if (out.empty()) {
    fail(why, "the node serves no slot and knows no node that does (CLUSTER SLOTS is empty)");
    return std::nullopt;
  }
  return out;
}

std::optional<redirect> parse_redirect(std::string_view text, std::string_view asked_host) {
  redirect out;
  if (text.starts_with("MOVED ")) {
    text.remove_prefix(6);
  } else if (text.starts_with("ASK ")) {
    out.ask = true;
    text.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const auto space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto slot = parse_whole_number(text.substr(0, space), 0, cluster_slot_count - 1);
  if (!slot) return std::nullopt;
  out.slot = static_cast<std::uint16_t>(*slot);
  auto to = parse_endpoint(text.substr(space + 1), asked_host);
  if (!to) return std::nullopt;
  out.to = std::move(*to);
  return out;
}

}  // namespace rlock::detail
