// status_line.hpp: one line of progress on stderr while rlock waits.
//
// Modes: terminal (stderr is a tty): the line is redrawn in place ("\r", text cut to the
// terminal width so it never wraps, clear-to-end-of-line) and erased by clear(); log (not a tty,
// --verbose): each update is printed as its own line; off: nothing is printed.
//
// Guarantees: control characters of the text are escaped (terminal_text.hpp); writes go straight to
// file descriptor 2 (no buffering to interleave with other output); clear() and the destructor
// leave the cursor at the start of an empty line in terminal mode. Not thread-safe: one owner
// thread.
#pragma once

#include <string>

namespace rlock::cli {

enum class progress_mode { off, terminal, log };

/// terminal if stderr is a tty; otherwise log with `verbose`, else off.
progress_mode progress_mode_for(bool verbose);

class status_line {
 public:
  explicit status_line(progress_mode mode) : mode_(mode) {}
  ~status_line() { clear(); }
  status_line(const status_line&) = delete;
  status_line& operator=(const status_line&) = delete;

  progress_mode mode() const { return mode_; }
  void update(const std::string& text);
  void clear();

 private:
  progress_mode mode_;
  bool shown_ = false;
};

/// Writes `text` to stderr in one write(2) call (lines of concurrent writers do not mix).
void write_stderr(const std::string& text);

}  // namespace rlock::cli
