#include "signal_channel.hpp"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

namespace rlock::cli {

signal_channel::signal_channel(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  if (const int rc = pthread_sigmask(SIG_BLOCK, &set, &previous_); rc != 0) {
    throw std::runtime_error(std::string("pthread_sigmask: ") + std::system_category().message(rc));
  }
  fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    throw std::runtime_error(std::string("signalfd: ") + std::system_category().message(err));
  }
}

signal_channel::~signal_channel() {
  while (next()) {
  }
  ::close(fd_);
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

std::optional<signalfd_siginfo> signal_channel::next() {
  signalfd_siginfo info{};
  for (;;) {
    const ssize_t n = ::read(fd_, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) return info;
    if (n < 0 && errno == EINTR) continue;
    return std::nullopt;  // EAGAIN: nothing pending
  }
}

bool sent_by_terminal(const signalfd_siginfo& info) noexcept {
  return info.ssi_code == SI_KERNEL;
}

}  // namespace rlock::cli
