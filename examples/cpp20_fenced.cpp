// The fenced lock example: a holder passes its fencing token to the resource it writes, and the
// resource refuses a write with a token lower than one it has seen, so a holder that lost its
// lock without knowing (paused past its lease, cut off) cannot overwrite a later holder's work.
//
//   rlock_fenced_example [redis://host:port]
//
// With no URL it starts a throwaway redis-server on a free loopback port.
#include <future>
#include <iostream>
#include <mutex>
#include <optional>
#include <rlock/client.hpp>
#include <string>
#include <thread>

#include "example_server.hpp"  // tools/

using namespace std::chrono_literals;

namespace {

// The resource's side: it remembers the highest token it accepted (here in memory; a database
// would keep it in the row it guards, and compare in the same transaction as the write).
class fenced_store {
 public:
  bool write(rlock::fencing_token token, const std::string& value) {
    std::lock_guard g(mu_);
    if (token < highest_) return false;  // from a holder the lock has since moved past
    highest_ = token;
    value_ = value;
    return true;
  }
  std::string value() const {
    std::lock_guard g(mu_);
    return value_;
  }

 private:
  mutable std::mutex mu_;
  rlock::fencing_token highest_ = 0;
  std::string value_;
};

}  // namespace

int main(int argc, char** argv) try {
  const rlock::examples::example_server server(argc, argv);  // argv[1], else a throwaway one
  rlock::config cfg;
  cfg.address = server.url();
  rlock::client client(cfg);
  fenced_store store;

  // Redisson's RFencedLock: the lock's own keys plus "redisson_lock_token:{invoice-42}".
  rlock::fenced_lock invoice = client.get_fenced_lock("invoice-42");

  // A holder whose lease runs out while it is stalled (here: waiting for the second holder) has
  // a token older than the next holder's, and the store refuses its late write.
  std::promise<rlock::fencing_token> first_token;
  std::promise<void> second_wrote;
  std::thread first([&] {
    const rlock::fencing_token stale = invoice.lock_and_get_token(200ms);  // lease 200 ms
    first_token.set_value(stale);
    second_wrote.get_future().wait();  // ... stalled past its lease
    std::cout << "first holder's late write (token " << stale
              << "): " << (store.write(stale, "void") ? "accepted" : "refused") << "\n";
    invoice.unlock();  // the lock is gone: its loss token tells it so; nothing else happens
  });
  std::cout << "first holder got token " << first_token.get_future().get() << "\n";
  // This thread waits for the lock (at most 5 s): it gets it when the first lease ends.
  const std::optional<rlock::fencing_token> fresh = invoice.try_lock_and_get_token(5s, 10s);
  if (!fresh) throw std::runtime_error("the first lease did not end");
  std::cout << "second holder got token " << *fresh
            << "; its write: " << (store.write(*fresh, "paid") ? "accepted" : "refused") << "\n";
  second_wrote.set_value();
  first.join();
  invoice.unlock_or_throw();
  std::cout << "store holds '" << store.value() << "'; latest token " << invoice.token() << "\n";
  return store.value() == "paid" ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
