#include "support/redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "support/loopback_address.hpp"
#include "support/process.hpp"
#include "support/redis_cli.hpp"

namespace rlock::test {

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr int max_start_attempts = 20;
constexpr auto start_timeout = 10s;

std::pair<unsigned, unsigned> ephemeral_port_range() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  unsigned low = 0;
  unsigned high = 0;
  if (in >> low >> high && low <= high) return {low, high};
  return {32768, 60999};
}

// The same bind redis will do (SO_REUSEADDR on 127.0.0.1), so "free" here means redis can bind.
bool port_is_free(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  const sockaddr_in addr = loopback_address(port);
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// A random free port in [15000, 65535], outside the ephemeral range the kernel hands out to
// outgoing connections (which could otherwise grab the port between our test and redis's bind).
std::uint16_t pick_free_port() {
  thread_local std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<unsigned> dist(15000, 65535);
  const auto [low, high] = ephemeral_port_range();
  for (int i = 0; i < 2000; ++i) {
    const unsigned candidate = dist(rng);
    if (i < 1000 && candidate >= low && candidate <= high) continue;
    if (port_is_free(static_cast<std::uint16_t>(candidate))) {
      return static_cast<std::uint16_t>(candidate);
    }
  }
  throw std::runtime_error("redis_server: no free loopback port found");
}

// A value for redis.conf, double-quoted with the escapes redis's config parser understands.
std::string quote(const std::string& value) {
  std::string out = "\"";
  for (const char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string read_tail(const std::filesystem::path& path, std::size_t max_bytes,
                      std::uintmax_t from = 0) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uintmax_t>(in.tellg());
  std::uintmax_t start = std::max(from, size > max_bytes ? size - max_bytes : 0);
  if (start > size) start = size;
  in.seekg(static_cast<std::streamoff>(start));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uintmax_t file_size_or_zero(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

std::optional<long long> info_field(const std::string& info, std::string_view field) {
  const std::string key = "\n" + std::string(field) + ":";
  const std::string text = "\n" + info;
  const auto at = text.find(key);
  if (at == std::string::npos) return std::nullopt;
  const char* begin = text.data() + at + key.size();
  long long value = 0;
  const auto [end, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (ec != std::errc() || end == begin) return std::nullopt;
  return value;
}

// true once /proc says the process is stopped (state T).
bool process_is_stopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         (stat[paren + 2] == 'T' || stat[paren + 2] == 't');
}

}  // namespace

redis_server::redis_server(server_options options)
    : options_(std::move(options)), dir_("rlock-redis") {
  if (options_.tls) {
    tls_ = options_.shared_tls ? *options_.shared_tls : generate_test_certificates(dir_.path());
  }
  const auto deadline = clock_type::now() + start_timeout;
  for (int attempt = 1;; ++attempt) {
    port_ = pick_free_port();
    if (options_.cluster) {
      do {
        bus_port_ = pick_free_port();
      } while (bus_port_ == port_);
    }
    write_config();
    if (start_once(deadline) == start_result::ready) return;
    if (attempt == max_start_attempts) {
      throw_start_failure("the port was taken by another process " +
                          std::to_string(max_start_attempts) + " times");
    }
  }
}

redis_server::~redis_server() {
  if (process_) {
    process_->kill(SIGCONT);
    process_.reset();  // SIGKILL + reap
  }
}

std::string redis_server::url() const {
  return std::string(options_.tls ? "rediss://" : "redis://") + host() + ":" +
         std::to_string(port_);
}

pid_t redis_server::pid() const {
  return running() ? process_->pid() : -1;
}

bool redis_server::running() const {
  return process_ && process_->running();
}

const tls_files& redis_server::tls() const {
  if (!options_.tls) throw std::logic_error("redis_server::tls: not a TLS server");
  return tls_;
}

std::filesystem::path redis_server::log_path() const {
  return dir_.path() / "redis.log";
}

void redis_server::write_config() const {
  std::ofstream conf(dir_.path() / "redis.conf", std::ios::trunc);
  conf << "# written by rlock::test::redis_server\n";
  conf << "bind 127.0.0.1\n";
  if (options_.tls) {
    conf << "port 0\n";
    conf << "tls-port " << port_ << "\n";
    conf << "tls-cert-file " << quote(tls_.server_cert.string()) << "\n";
    conf << "tls-key-file " << quote(tls_.server_key.string()) << "\n";
    conf << "tls-ca-cert-file " << quote(tls_.ca_cert.string()) << "\n";
    conf << "tls-auth-clients optional\n";
  } else {
    conf << "port " << port_ << "\n";
  }
  conf << "dir " << quote(dir_.path().string()) << "\n";
  conf << "logfile " << quote(log_path().string()) << "\n";
  conf << "daemonize no\n";
  if (options_.persistence) {
    conf << "appendonly yes\n";
    conf << "appendfsync always\n";
  } else {
    conf << "save \"\"\n";
    conf << "appendonly no\n";
  }
  conf << "enable-debug-command local\n";
  if (options_.cluster) {
    conf << "cluster-enabled yes\n";
    conf << "cluster-config-file nodes.conf\n";  // in dir
    conf << "cluster-port " << bus_port_ << "\n";
    if (options_.tls) {
      conf << "tls-cluster yes\n";
      conf << "tls-replication yes\n";
      conf << "tls-client-cert-file " << quote(tls_.client_cert.string()) << "\n";
      conf << "tls-client-key-file " << quote(tls_.client_key.string()) << "\n";
    }
  }
  if (!options_.requirepass.empty()) conf << "requirepass " << quote(options_.requirepass) << "\n";
  for (const auto& rule : options_.acl_users) conf << "user " << rule << "\n";
  conf.flush();
  if (!conf)
    throw std::runtime_error("redis_server: cannot write " + (dir_.path() / "redis.conf").string());
}

redis_server::start_result redis_server::start_once(clock_type::time_point deadline) {
  const std::uintmax_t log_offset = file_size_or_zero(log_path());
  std::vector<std::string> args{(dir_.path() / "redis.conf").string()};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  child_options child;
  child.stdout_file = dir_.path() / "stdout.log";
  child.merge_stderr = true;
  child.extra_env = options_.extra_env;
  process_ = std::make_unique<child_process>(find_program("redis-server", "/usr/bin/redis-server"),
                                             std::move(args), std::move(child));
  paused_ = false;

  std::string last_error;
  auto backoff = 2ms;
  for (;;) {
    if (const std::optional<int> status = process_->wait_for(0ms)) {
      process_.reset();
      const std::string output = read_tail(log_path(), 1U << 20U, log_offset) +
                                 read_tail(dir_.path() / "stdout.log", 1U << 20U);
      if (output.find("Address already in use") != std::string::npos) {
        return start_result::port_taken;
      }
      throw_start_failure("redis-server exited during startup with status " +
                          std::to_string(*status));
    }
    const auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    bool port_taken = false;
    if (probe(std::clamp<std::chrono::milliseconds>(remaining, 100ms, 500ms), port_taken,
              last_error)) {
      return start_result::ready;
    }
    if (port_taken) {
      process_.reset();
      return start_result::port_taken;
    }
    if (clock_type::now() >= deadline) {
      throw_start_failure("no PONG within " + std::to_string(start_timeout.count()) +
                          " s (last probe: " + last_error + ")");
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, 50ms);
  }
}

bool redis_server::probe(std::chrono::milliseconds timeout, bool& port_taken,
                         std::string& error) const {
  try {
    raw_reply info;
    raw_reply pong;
    if (options_.tls) {
      redis_cli_target target{host(), port_, options_.requirepass, &tls_};
      info = run_redis_cli(target, {"INFO", "server"}, timeout);
      if (info.is_string() && info_field(info.str, "process_id") == process_->pid()) {
        pong = run_redis_cli(target, {"PING"}, timeout);
      }
    } else {
      raw_client client(host(), port_, timeout, options_.requirepass);
      info = client.command({"INFO", "server"});
      if (info.is_string() && info_field(info.str, "process_id") == process_->pid()) {
        pong = client.command({"PING"});
      }
    }
    if (!info.is_string()) {
      std::ostringstream text;
      text << "INFO replied " << info;
      error = text.str();
      return false;
    }
    if (info_field(info.str, "process_id") != process_->pid()) {
      error = "another redis-server answers on this port";
      port_taken = true;
      return false;
    }
    if (pong.str == "PONG" && !pong.is_error()) return true;
    std::ostringstream text;
    text << "PING replied " << pong;
    error = text.str();
    return false;
  } catch (const std::runtime_error& e) {
    error = e.what();
    return false;
  }
}

void redis_server::throw_start_failure(const std::string& reason) {
  process_.reset();
  throw std::runtime_error("redis_server: " + reason + " (port " + std::to_string(port_) +
                           ", dir " + dir_.path().string() + ")\n--- server output ---\n" +
                           log_tail());
}

std::string redis_server::log_tail(std::size_t max_bytes) const {
  std::string out = read_tail(dir_.path() / "stdout.log", max_bytes / 4);
  out += read_tail(log_path(), max_bytes);
  return out;
}

void redis_server::pause() {
  if (!running()) return;
  process_->kill(SIGSTOP);
  paused_ = true;
  // Return only once the kernel has actually stopped it, so a command sent next is not served.
  const auto limit = clock_type::now() + 2s;
  while (!process_is_stopped(process_->pid()) && clock_type::now() < limit) {
    std::this_thread::sleep_for(1ms);
  }
}

void redis_server::resume() {
  if (!running()) return;
  process_->kill(SIGCONT);
  paused_ = false;
}

void redis_server::kill() {
  if (!process_) return;
  process_->kill(SIGKILL);
  process_->wait_for(10s);
  process_.reset();
  paused_ = false;
}

void redis_server::stop() {
  if (!process_) return;
  if (!process_->running()) {
    process_.reset();
    paused_ = false;
    return;
  }
  resume();
  try {
    cli_reply({"SHUTDOWN", "NOSAVE"});
  } catch (const std::exception&) {
    // Expected: the server closes the connection instead of replying.
  }
  if (!process_->wait_for(5s)) {
    process_->kill(SIGTERM);
    if (!process_->wait_for(5s)) process_->kill(SIGKILL);
  }
  process_.reset();
  paused_ = false;
}

void redis_server::restart() {
  kill();
  if (start_once(clock_type::now() + start_timeout) != start_result::ready) {
    throw_start_failure("restart: port " + std::to_string(port_) +
                        " is now used by another process");
  }
}

raw_reply redis_server::cli_reply(const std::vector<std::string>& args) const {
  if (options_.tls) {
    const redis_cli_target target{host(), port_, options_.requirepass, &tls_};
    return run_redis_cli(target, args);
  }
  raw_client client(host(), port_, 5s, options_.requirepass);
  return client.command(args);
}

std::string redis_server::cli(const std::vector<std::string>& args) const {
  return cli_reply(args).text();
}

raw_client redis_server::client(std::chrono::milliseconds timeout) const {
  if (options_.tls) throw std::logic_error("redis_server::client: TLS server (use cli())");
  return raw_client(host(), port_, timeout, options_.requirepass);
}

}  // namespace rlock::test
