// server_monitor: a server's commands as MONITOR shows them, from a raw connection of its own,
// for tests that check what rlock sent (and when, on the server's clock).
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/raw_client.hpp"
#include "support/redis_server.hpp"

namespace rlock::test {

/// One command as MONITOR shows it: the server's time (s), its quoted arguments, and whether a
/// script ran it ("[0 lua]") rather than a client.
struct monitored {
  double at = 0;
  std::vector<std::string> args;
  bool from_script = false;
};

/// Parses `1700000000.123456 [0 127.0.0.1:5000] "EVALSHA" "abc" "1" ...` (for arguments that
/// hold no quotes or backslashes).
inline monitored parse_monitor_line(const std::string& line) {
  monitored m;
  m.at = std::stod(line.substr(0, line.find(' ')));
  const auto source_end = line.find("] ");
  m.from_script = source_end != std::string::npos && source_end >= 4 &&
                  line.compare(source_end - 4, 4, " lua") == 0;
  for (auto open = line.find('"'); open != std::string::npos; open = line.find('"', open + 1)) {
    const auto close = line.find('"', open + 1);
    if (close == std::string::npos) break;
    m.args.push_back(line.substr(open + 1, close - open - 1));
    open = close;
  }
  return m;
}

/// Watches a server's commands from a raw connection in MONITOR mode (from its construction on).
class server_monitor {
 public:
  explicit server_monitor(const redis_server& server)
      : conn_(server.host(), server.port(), std::chrono::seconds(5)) {
    conn_.send({"MONITOR"});
    const auto ok = conn_.read(std::chrono::seconds(5));
    if (!ok || ok->text() != "OK") throw std::runtime_error("MONITOR refused");
  }

  /// The next command that `pred` accepts, or nothing if `within` passes first.
  template <typename Pred>
  std::optional<monitored> next(Pred pred, std::chrono::milliseconds within) {
    using std::chrono::steady_clock;
    const auto end = steady_clock::now() + within;
    while (steady_clock::now() < end) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - steady_clock::now());
      const auto reply = conn_.read(std::max(left, std::chrono::milliseconds(1)));
      if (!reply) break;
      auto m = parse_monitor_line(reply->str);
      if (pred(m)) return m;
    }
    return std::nullopt;
  }

  /// The next command named `name` (as sent: "WAIT", "INFO"), or nothing within `within`.
  std::optional<monitored> next_named(const std::string& name, std::chrono::milliseconds within) {
    return next([&](const monitored& m) { return !m.args.empty() && m.args[0] == name; }, within);
  }

 private:
  raw_client conn_;
};

}  // namespace rlock::test
