// A throwaway redis-server on a free loopback port, for examples and demos run without a URL.
// The server runs in a temporary folder, is killed when this object is destroyed, and also when
// the parent process dies (PR_SET_PDEATHSIG).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

namespace rlock::examples {  // shared by examples, tools and benchmarks

class throwaway_server {
 public:
  /// A plain server, or (`cluster`) a Redis Cluster node serving no slot yet, its cluster bus on
  /// another free port (bus_port()).
  explicit throwaway_server(bool cluster = false) : cluster_(cluster) {
    char tmpl[] = "/tmp/rlock-redis-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    for (int attempt = 0; attempt < 20; ++attempt) {
      port_ = free_port();
      bus_port_ = cluster_ ? free_port() : 0;
      if (launch()) return;
    }
    std::filesystem::remove_all(dir_);
    throw std::runtime_error(
        "could not start redis-server (is the redis-server package installed?)");
  }
  ~throwaway_server() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  throwaway_server(const throwaway_server&) = delete;
  throwaway_server& operator=(const throwaway_server&) = delete;

  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  int bus_port() const { return bus_port_; }

 private:
  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&     // NOLINT
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {  // NOLINT
      port = ntohs(a.sin_port);
    }
    ::close(fd);
    if (port == 0) throw std::runtime_error("no free loopback port");
    return port;
  }

  static bool answers(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;  // NOLINT
    if (ok) {
      const char ping[] = "*1\r\n$4\r\nPING\r\n";
      char buf[16] = {};
      ok = ::write(fd, ping, sizeof ping - 1) == sizeof ping - 1 && ::read(fd, buf, 7) > 0 &&
           std::string(buf).starts_with("+PONG");
    }
    ::close(fd);
    return ok;
  }

  bool launch() {
    const std::string port = std::to_string(port_);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      const std::string log = dir_ + "/redis.log";
      const std::string bus = std::to_string(bus_port_);
      if (cluster_) {
        ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
                 "--dir", dir_.c_str(), "--save", "", "--appendonly", "no", "--logfile",
                 log.c_str(), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-port", bus.c_str(), static_cast<char*>(nullptr));
      } else {
        ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
                 "--dir", dir_.c_str(), "--save", "", "--appendonly", "no", "--logfile",
                 log.c_str(), static_cast<char*>(nullptr));
      }
      ::_exit(127);
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    auto step = std::chrono::milliseconds(2);
    while (std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // exited: port taken or not installed
        pid_ = -1;
        return false;
      }
      if (answers(port_)) return true;
      std::this_thread::sleep_for(step);  // readiness poll of an external process
      step = std::min(step * 2, std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return false;
  }

  bool cluster_ = false;
  std::string dir_;
  int port_ = 0;
  int bus_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace rlock::examples
