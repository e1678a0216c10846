// demo_event_log.hpp: the parent's side of the worker event protocol (demo_events.hpp), shared
// by `rlock demo` and `rlock bench contended`: reading event lines from the workers' pipe and
// assembling them into critical sections.
//
// Guarantees:
//  - event_reader::pump() reads what is available on a non-blocking descriptor without
//    blocking, hands every complete line that parses to the callback in order, keeps a partial
//    line for the next call, and drops lines that do not parse. at_eof() once every writer has
//    closed the pipe.
//  - record_event() pairs "acquired" and "released" of the same (worker, seq) into a
//    critical_section; an "acquired" never released stays in `open` (an incomplete section).
//  - Not thread-safe: one owner thread.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "demo_events.hpp"
#include "demo_stats.hpp"

namespace rlock::cli {

/// Everything the parent learns from the workers' event lines.
struct demo_record {
  int ready = 0;
  std::map<std::pair<int, long long>, long long> open{};  // (worker, seq) -> acquired_ns
  std::vector<critical_section> sections{};
  std::vector<std::string> errors{};
};

void record_event(demo_record& r, const demo_event& e);

class event_reader {
 public:
  explicit event_reader(int fd) : fd_(fd) {}
  int fd() const { return fd_; }
  bool at_eof() const { return eof_; }
  /// Reads and dispatches the complete lines available now.
  template <class F>
  void pump(F&& on_event) {
    if (eof_) return;
    eof_ = !read_available();
    std::size_t start = 0;
    for (std::size_t nl; (nl = buffer_.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (auto e = parse_demo_event(std::string_view(buffer_).substr(start, nl - start))) {
        on_event(*e);
      }
    }
    buffer_.erase(0, start);
  }

 private:
  /// Reads what is available into buffer_; false at end of file.
  bool read_available();

  int fd_;
  std::string buffer_{};
  bool eof_ = false;
};

}  // namespace rlock::cli
