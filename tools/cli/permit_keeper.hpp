// permit_keeper.hpp: keeps one permit of a permit-expirable semaphore for `rlock exec --permits`:
// renews its lease every third of it, as the watchdog renews a lock, and says when it is lost.
// A thread of its own carries out permit_renewal.hpp's protocol (when to renew, when the permit
// is lost) with the asynchronous update_lease_time.
//
// Guarantees:
//  - valid_until (given, then moved on by each renewal) is a lower bound of the lease's end on
//    the server: the time a request that set the lease was sent, plus the lease. A renewal
//    confirmed by the server moves it to that renewal's send time plus the lease.
//  - The loss token is stopped when a renewal finds the permit gone (released, reclaimed after
//    its lease ended, the semaphore deleted), or when valid_until passes with no renewal
//    confirmed (a server that is down, paused or refusing): the command must stop before the
//    permit can be given to anyone else. An error is retried every tenth of the lease (at most
//    1 s) until then.
//  - With `renew` false (a fixed --lease) nothing is sent: the token is stopped at valid_until.
//  - The destructor stops renewing at once and joins the thread; a renewal in flight is
//    abandoned (its answer is dropped). The permit itself is released by the caller.
// After a failover to a replica that had not received the last renewal, the lease is the
// replica's: a renewal then finds the permit gone, or valid_until passes, and the token stops.
#pragma once

#include <chrono>
#include <rlock/client.hpp>
#include <stop_token>
#include <string>
#include <thread>

#include "permit_renewal.hpp"

namespace rlock::cli {

class permit_keeper {
 public:
  using clock = std::chrono::steady_clock;

  permit_keeper(rlock::permit_expirable_semaphore semaphore, std::string id,
                std::chrono::milliseconds lease, clock::time_point valid_until, bool renew);
  ~permit_keeper();
  permit_keeper(const permit_keeper&) = delete;
  permit_keeper& operator=(const permit_keeper&) = delete;

  const std::string& id() const { return id_; }
  std::stop_token loss_token() const { return lost_.get_token(); }

 private:
  void run(const std::stop_token& stop);

  rlock::permit_expirable_semaphore semaphore_;
  std::string id_;
  std::chrono::milliseconds lease_;
  permit_renewal protocol_;  // read and written by the thread only, once started
  std::stop_source lost_;
  std::jthread thread_;  // last: started once the members it reads are set
};

}  // namespace rlock::cli
