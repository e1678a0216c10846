// The calling thread's random generator, for ids and jitter.
#pragma once

#include <random>

namespace rlock::detail {

/// The calling thread's generator, seeded on its first use with 256 bits from
/// std::random_device: two threads, of any processes, draw the same sequence with odds of
/// 2^-256 (seeded from one 32-bit word, 1 in 2^32 per pair, and ids of one lock name must not
/// meet). A draw from std::random_device itself cost about 40 us here; one from this, a few
/// nanoseconds. Not for secrets: its output predicts what follows.
inline std::mt19937_64& thread_rng() {
  thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  return rng;
}

}  // namespace rlock::detail
