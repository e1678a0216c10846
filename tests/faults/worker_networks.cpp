#include "faults/worker_networks.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace rlock::faults {
namespace {

using namespace std::chrono_literals;

std::filesystem::path ip_program() {
  return test::find_program("ip", "/usr/sbin/ip");
}
std::filesystem::path tc_program() {
  return test::find_program("tc", "/usr/sbin/tc");
}

// Slots a run can claim on one machine, and the files whose flock claims one.
constexpr int slot_count = 64;
std::filesystem::path slot_file(int slot) {
  return std::filesystem::temp_directory_path() /
         ("rlock-fault-networks-" + std::to_string(slot) + ".lock");
}

// The RFC 2544 networks of the two links, and an address on one: the /30 number
// k = slot * 256 + id of the network, k's address `end` (1 is the runner's side, 2 the
// worker's).
constexpr std::string_view lock_net = "198.18.";
constexpr std::string_view register_net = "198.19.";
std::string link_address(std::string_view net, int slot, int id, int end) {
  const int k = slot * 256 + id;
  return std::string(net) + std::to_string(k / 64) + "." + std::to_string(k % 64 * 4 + end);
}

// One ip command line from its words.
std::string words(std::initializer_list<std::string_view> parts) {
  std::string line;
  for (const auto part : parts) {
    if (!line.empty()) line += ' ';
    line += part;
  }
  return line;
}

struct program_result {
  int status = -1;
  std::string output{};
};

program_result run_program(const std::filesystem::path& program, std::vector<std::string> args) {
  test::child_options opts;
  opts.merge_stderr = true;
  test::child_process p(program, std::move(args), opts);
  const auto status = p.wait_for(10s);
  return {status.value_or(-1), p.output()};
}
program_result run_ip(std::vector<std::string> args) {
  return run_program(ip_program(), std::move(args));
}

// `tc [-n ns] qdisc <verb> dev <dev> root [pfifo limit 0]`: a root queue that drops every
// packet the device sends ("replace" installs it, "del" restores the device's default).
// With `must`, a failure throws.
void drop_all_sent(const std::string& ns, const std::string& dev, bool drop, bool must) {
  std::vector<std::string> args;
  if (!ns.empty()) args.insert(args.end(), {"-n", ns});
  args.insert(args.end(), {"qdisc", drop ? "replace" : "del", "dev", dev, "root"});
  if (drop) args.insert(args.end(), {"pfifo", "limit", "0"});
  const auto r = run_program(tc_program(), args);
  if (r.status != 0 && must) {
    std::string line;
    for (const auto& a : args) line += " " + a;
    throw std::runtime_error("worker_networks: tc" + line + " failed (" + std::to_string(r.status) +
                             "): " + r.output);
  }
}

// Runs `lines` as one `ip -batch`, inside namespace `ns` if not empty; with `force`, failed
// lines are ignored.
void run_batch(const std::vector<std::string>& lines, bool force, const std::string& ns = {}) {
  const test::temp_dir dir("rlock-netns");
  const auto file = dir.path() / "batch";
  {
    std::ofstream out(file);
    for (const auto& l : lines) out << l << '\n';
  }
  std::vector<std::string> args;
  if (!ns.empty()) args.insert(args.end(), {"-n", ns});
  if (force) args.emplace_back("-force");
  args.emplace_back("-batch");
  args.push_back(file.string());
  const auto r = run_ip(std::move(args));
  if (r.status != 0 && !force) {
    std::string text;
    for (const auto& l : lines) text += "\n  ip " + l;
    throw std::runtime_error("worker_networks: ip " + (ns.empty() ? "" : "-n " + ns + " ") +
                             "-batch failed (" + std::to_string(r.status) + "): " + r.output +
                             "\nbatch:" + text);
  }
}

// Why a namespace cannot be made here (empty if it can); with `one_way`, also why the pfifo
// queue of one_way_unavailable() cannot be set up in one.
std::string probe(bool one_way) {
  try {
    (void)ip_program();
    if (one_way) (void)tc_program();
  } catch (const std::exception& e) {
    return std::string("no ip or tc (iproute2): ") + e.what();
  }
  // Named after this process, so that probes of runs side by side leave each other alone.
  const std::string name = "rlock-fault-probe-" + std::to_string(::getpid());
  run_ip({"netns", "del", name});
  if (const auto r = run_ip({"netns", "add", name}); r.status != 0) {
    return "cannot create a network namespace: " + r.output;
  }
  std::string why;
  try {
    if (one_way) drop_all_sent(name, "lo", true, true);
  } catch (const std::exception& e) {
    why = std::string("no pfifo qdisc: ") + e.what();
  }
  run_ip({"netns", "del", name});
  return why;
}

}  // namespace

std::string worker_networks::unavailable() {
  return probe(false);
}

std::string worker_networks::one_way_unavailable() {
  return probe(true);
}

worker_networks::slot_claim::slot_claim() {
  for (int slot = 0; slot < slot_count; ++slot) {
    const auto file = slot_file(slot);
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
      throw std::system_error(errno, std::generic_category(),
                              "worker_networks: open " + file.string());
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      fd_ = fd;
      slot_ = slot;
      return;
    }
    ::close(fd);
  }
  throw std::runtime_error("worker_networks: all " + std::to_string(slot_count) +
                           " slots are taken by other runs on this machine");
}

worker_networks::slot_claim::~slot_claim() {
  ::close(fd_);
}

std::string worker_networks::ns_name(int id) const {
  return "rlock-fault-" + std::to_string(slot()) + "-" + std::to_string(id);
}
// Interface names: at most 15 characters ("rl63l250p": 9).
std::string worker_networks::lock_link(int id) const {
  return "rl" + std::to_string(slot()) + "l" + std::to_string(id);
}
std::string worker_networks::register_link(int id) const {
  return "rl" + std::to_string(slot()) + "r" + std::to_string(id);
}

std::vector<std::string> worker_networks::teardown_lines() const {
  std::vector<std::string> lines;
  for (int id = 1; id <= count_; ++id) {
    // Deleting one end of a veth pair deletes both, at once (a namespace's own deletion is
    // asynchronous, so its links could still hold the names and addresses for a while).
    lines.push_back("link del " + lock_link(id));
    lines.push_back("link del " + register_link(id));
    lines.push_back("netns del " + ns_name(id));
  }
  return lines;
}

worker_networks::worker_networks(int count) : count_(count) {
  if (count < 1 || count > 250) throw std::invalid_argument("worker_networks: 1..250 workers");
  run_batch(teardown_lines(), true);
  try {
    for (int id = 1; id <= count; ++id) {
      const std::string ns = ns_name(id);
      std::vector<std::string> outside{"netns add " + ns};
      std::vector<std::string> inside{"link set lo up"};
      for (const auto& [link, net] :
           {std::pair{lock_link(id), lock_net}, std::pair{register_link(id), register_net}}) {
        const std::string peer = link + "p";
        outside.push_back(words({"link add", link, "type veth peer name", peer, "netns", ns}));
        outside.push_back(
            words({"addr add", link_address(net, slot(), id, 1) + "/30", "dev", link}));
        outside.push_back(words({"link set", link, "up"}));
        inside.push_back(
            words({"addr add", link_address(net, slot(), id, 2) + "/30", "dev", peer}));
        inside.push_back(words({"link set", peer, "up"}));
      }
      run_batch(outside, false);
      run_batch(inside, false, ns);
    }
  } catch (...) {
    run_batch(teardown_lines(), true);
    throw;
  }
}

worker_networks::~worker_networks() {
  try {
    run_batch(teardown_lines(), true);
  } catch (...) {  // NOLINT(bugprone-empty-catch): best effort, never throws
  }
}

std::string worker_networks::lock_host(int id) const {
  return link_address(lock_net, slot(), id, 1);
}
std::string worker_networks::register_host(int id) const {
  return link_address(register_net, slot(), id, 1);
}

std::vector<std::string> worker_networks::lock_hosts() const {
  std::vector<std::string> v;
  for (int id = 1; id <= count_; ++id) v.push_back(lock_host(id));
  return v;
}
std::vector<std::string> worker_networks::register_hosts() const {
  std::vector<std::string> v;
  for (int id = 1; id <= count_; ++id) v.push_back(register_host(id));
  return v;
}

std::vector<std::string> worker_networks::exec_prefix(int id) const {
  if (id < 1 || id > count_) {
    throw std::out_of_range("worker_networks: no namespace for worker " + std::to_string(id));
  }
  return {ip_program().string(), "netns", "exec", ns_name(id)};
}

void worker_networks::cut(int id) {
  run_batch({"link set " + lock_link(id) + "p down"}, false, ns_name(id));
}

void worker_networks::heal(int id) {
  run_batch({"link set " + lock_link(id) + "p up"}, false, ns_name(id));
}

void worker_networks::deafen(int id) {
  drop_all_sent({}, lock_link(id), true, true);
}

void worker_networks::mute(int id) {
  drop_all_sent(ns_name(id), lock_link(id) + "p", true, true);
}

void worker_networks::restore(int id) {
  drop_all_sent({}, lock_link(id), false, false);
  drop_all_sent(ns_name(id), lock_link(id) + "p", false, false);
}

}  // namespace rlock::faults
