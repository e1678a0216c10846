// worker_networks: faults N5 and N6, a worker cut off from the lock server by the kernel.
//
// Each worker gets a network namespace of its own (rlock-fault-<slot>-<id>), joined to the
// runner's namespace by two veth pairs, each a /30 of the benchmarking range (RFC 2544, never
// routed): the lock link in 198.18.0.0/16 (runner side, where the lock server listens, and the
// worker's side), the register link the same in 198.19.0.0/16.
// The slot (0..63) is this object's own on the machine, held with an flock(2) on a file in the
// temporary directory for its whole life, so that runs from other checkouts or build trees on
// the same machine get other names and addresses instead of deleting each other's (a crashed
// run's lock goes with its process, and the next owner of the slot clears what it left).
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
//    names, and throws std::runtime_error with ip's output if a step fails, or if all 64 slots
//    are taken. The destructor
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
  std::string lock_host(int id) const;
  std::string register_host(int id) const;
  /// Every lock_host (or register_host), for the server's bind list.
  std::vector<std::string> lock_hosts() const;
  std::vector<std::string> register_hosts() const;
  /// This run's slot on the machine (0..63), in the names and addresses above.
  int slot() const { return claim_.slot(); }
  /// The command a worker's program runs under to live in its namespace.
  std::vector<std::string> exec_prefix(int id) const;

  void cut(int id);
  void heal(int id);

  static std::string one_way_unavailable();
  void deafen(int id);
  void mute(int id);
  void restore(int id);

 private:
  std::string ns_name(int id) const;
  std::string lock_link(int id) const;
  std::string register_link(int id) const;
  std::vector<std::string> teardown_lines() const;

  // The open, flock'ed file of a slot; closing it (the destructor, or the process's end)
  // frees the slot.
  class slot_claim {
   public:
    slot_claim();
    ~slot_claim();
    slot_claim(const slot_claim&) = delete;
    slot_claim& operator=(const slot_claim&) = delete;
    int slot() const { return slot_; }

   private:
    int fd_ = -1;
    int slot_ = -1;
  };

  slot_claim claim_;
  int count_;
};

}  // namespace rlock::faults
