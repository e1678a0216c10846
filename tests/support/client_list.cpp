#include "support/client_list.hpp"

#include <sstream>

namespace rlock::test {

std::vector<client_fields> client_list(const redis_server& server, std::string_view name) {
  std::vector<client_fields> out;
  std::istringstream lines(server.cli({"CLIENT", "LIST"}));
  for (std::string line; std::getline(lines, line);) {
    client_fields f;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      const auto eq = w.find('=');
      if (eq != std::string::npos) f.emplace(w.substr(0, eq), w.substr(eq + 1));
    }
    if (f.empty()) continue;
    const auto named = f.find("name");
    if (name.empty() || (named != f.end() && named->second == name)) {
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::map<std::string, long long> blocked_clients(const redis_server& server,
                                                 std::string_view name) {
  std::map<std::string, long long> out;
  for (const client_fields& f : client_list(server, name)) {
    if (f.at("flags").find('b') != std::string::npos) out[f.at("id")] = std::stoll(f.at("qbuf"));
  }
  return out;
}

std::string blocked_with_pending(const redis_server& server, std::string_view name,
                                 std::string_view except) {
  for (const auto& [id, qbuf] : blocked_clients(server, name)) {
    if (qbuf > 0 && id != except) return id;
  }
  return {};
}

}  // namespace rlock::test
