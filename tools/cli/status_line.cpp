#include "status_line.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>

#include "terminal_text.hpp"

namespace rlock::cli {
namespace {

std::size_t terminal_columns() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

/// Cuts `text` to at most `columns` characters, never inside a UTF-8 sequence.
std::string fit(const std::string& text, std::size_t columns) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (chars == columns) return text.substr(0, i);
    ++chars;
  }
  return text;
}

}  // namespace

void write_stderr(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stderr closed or full: progress is best effort
    done += static_cast<std::size_t>(n);
  }
}

progress_mode progress_mode_for(bool verbose) {
  if (::isatty(STDERR_FILENO) == 1) return progress_mode::terminal;
  return verbose ? progress_mode::log : progress_mode::off;
}

void status_line::update(const std::string& raw) {
  // The lock name and the holder come from the user and from Redis: escape control characters
  // (also so that fit() never cuts an escape sequence).
  const std::string text = printable(raw);
  switch (mode_) {
    case progress_mode::off:
      return;
    case progress_mode::log:
      write_stderr(text + "\n");
      return;
    case progress_mode::terminal: {
      const std::size_t columns = terminal_columns();
      write_stderr("\r" + fit(text, columns > 1 ? columns - 1 : columns) + "\x1b[K");
      shown_ = true;
      return;
    }
  }
}

void status_line::clear() {
  if (mode_ == progress_mode::terminal && shown_) write_stderr("\r\x1b[K");
  shown_ = false;
}

}  // namespace rlock::cli
