// worker_networks: faults N5 and N6, a worker cut off from the lock server by the kernel.
//
// Each worker gets a network namespace of its own (rlock-fault-<id>), joined to the runner's
// namespace by two veth pairs on addresses of the benchmarking range (RFC 2544, never routed):
//  - the lock link: 198.18.<id>.1 (runner side, where the lock server listens) to .2;
//  - the register link: 198.19.<id>.1 (the register server) to .2.
// cut(id) sets the worker's end of its lock link down: inside the namespace the link's route
// is gone, so new connections and sends fail at once (ENETUNREACH), and TCP segments already
// queued wait for a retransmission; on the runner's side the link has no carrier, so the
// server's replies are dropped at the link (its route stays: nothing leaves through another
// interface). The register link stays up, so a cut-off worker still reaches the resource,
// as a real client cut off from Redis may. heal(id) sets it up again; queued segments are
// then delivered, late.
//
// One direction only (an asymmetric partition): a pfifo queue of length 0 as the root qdisc
// of one end of the lock link drops every packet that end sends, and nothing else changes
// (the links stay up, routes stay, sends succeed locally).
//  - deafen(id): on the runner's end. The server's replies, pub/sub messages and ACKs never
//    reach worker id, while its requests still reach the server and run there: every outcome
//    is unknown to it, and a new connection of its never completes (the SYN arrives, the
//    SYN-ACK is dropped).
//  - mute(id): on the worker's end. What the worker sends vanishes silently (no ENETUNREACH,
//    unlike cut()): its requests time out; TCP retransmits them, so after the heal they may
//    arrive late.
//  - restore(id) removes both queues. one_way_unavailable() says why these cannot run (no tc,
//    or a kernel without the pfifo qdisc), empty if they can.
//
// Guarantees:
//  - Root and iproute2 are needed; unavailable() says why not, empty if the fault can run
//    (it creates and deletes a namespace to find out).
//  - The constructor first removes whatever an earlier, crashed run left under the same
//    names, and throws std::runtime_error with ip's output if a step fails. The destructor
//    deletes the links and namespaces (a namespace vanishes once its last process exits).
//  - Not thread-safe: one runner thread uses it.
#pragma once

#include <string>
#include <vector>

namespace rlock::faults {

class worker_networks {
 public:
  /// Namespaces and links for workers 1..count.
  explicit worker_networks(int count);
  ~worker_networks();
  worker_networks(const worker_networks&) = delete;
  worker_networks& operator=(const worker_networks&) = delete;

  static std::string unavailable();

  int count() const { return count_; }
  /// Where worker `id` reaches the lock server / the register server.
  static std::string lock_host(int id);
  static std::string register_host(int id);
  /// Every lock_host (or register_host), for the server's bind list.
  std::vector<std::string> lock_hosts() const;
  std::vector<std::string> register_hosts() const;
  /// The command a worker's program runs under to live in its namespace.
  std::vector<std::string> exec_prefix(int id) const;

  void cut(int id);
  void heal(int id);

  static std::string one_way_unavailable();
  void deafen(int id);
  void mute(int id);
  void restore(int id);

 private:
  std::vector<std::string> hosts(std::string (*host)(int)) const;

  int count_;
};

}  // namespace rlock::faults
