#include "demo_event_log.hpp"

#include <unistd.h>

#include <cerrno>

namespace rlock::cli {

void record_event(demo_record& r, const demo_event& e) {
  switch (e.kind) {
    case demo_event_kind::ready:
      ++r.ready;
      break;
    case demo_event_kind::acquired:
      r.open[{e.worker, e.seq}] = e.ns;
      break;
    case demo_event_kind::released: {
      const auto it = r.open.find({e.worker, e.seq});
      if (it != r.open.end()) {
        r.sections.push_back({e.worker, it->second, e.ns});
        r.open.erase(it);
      }
      break;
    }
    case demo_event_kind::done:
      break;
    case demo_event_kind::error:
      r.errors.push_back("worker " + std::to_string(e.worker) + ": " + e.text);
      break;
  }
}

bool event_reader::read_available() {
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n != 0;  // 0: EOF; -1 EAGAIN: drained
  }
}

}  // namespace rlock::cli
