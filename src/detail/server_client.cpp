#include "detail/server_client.hpp"

#include <algorithm>
#include <cctype>

#include "detail/resp.hpp"

namespace rlock::detail {
namespace {

/// The value of field `name` in CLIENT INFO's space-separated "name=value" list ("" if absent).
std::string_view field(std::string_view info, std::string_view name) {
  std::size_t pos = 0;
  while (pos < info.size()) {
    std::size_t end = info.find_first_of(" \r\n", pos);
    if (end == std::string_view::npos) end = info.size();
    const std::string_view item = info.substr(pos, end - pos);
    if (item.size() > name.size() && item.starts_with(name) && item[name.size()] == '=') {
      return item.substr(name.size() + 1);
    }
    pos = end + 1;
  }
  return {};
}

}  // namespace

std::optional<server_client> parse_client_info(std::string_view info) {
  const std::string_view id = field(info, "id");
  const std::string_view addr = field(info, "addr");
  if (id.empty() || id.size() > 20 || addr.empty()) return std::nullopt;
  if (!std::all_of(id.begin(), id.end(), [](unsigned char ch) { return std::isdigit(ch); })) {
    return std::nullopt;
  }
  return server_client{std::string(id), std::string(addr)};
}

std::array<std::string_view, 8> kill_args(const server_client& c) {
  return {"CLIENT", "KILL", "ID", c.id, "ADDR", c.addr, "SKIPME", "yes"};
}

void encode_kill(const server_client& c, std::string& out) {
  const auto args = kill_args(c);
  encode_command(args, out);
}

void add_unique(std::vector<server_client>& to, std::vector<server_client> from) {
  for (server_client& c : from) {
    if (std::find(to.begin(), to.end(), c) == to.end()) to.push_back(std::move(c));
  }
}

}  // namespace rlock::detail
