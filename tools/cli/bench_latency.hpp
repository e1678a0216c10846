// bench_latency.hpp: latency distributions of `rlock bench` in bounded memory: a log-linear
// histogram for percentiles and a uniform reservoir sample for plots.
//
// Guarantees:
//  - latency_histogram: record() is O(1) and allocation-free after construction; memory is
//    fixed (~29k buckets) whatever the number of samples. percentile() is nearest-rank over the
//    buckets and returns the bucket's midpoint: within 1/1024 of the exact nearest-rank value
//    (values below 1024 ns are exact). max() and count() are exact. merge() adds another
//    histogram's counts.
//  - latency_reservoir: keeps a uniform random sample of at most `capacity` of the values
//    offered (Algorithm R, seeded per instance). merge_reservoirs() combines per-thread
//    reservoirs into one uniform sample of at most `capacity`, each taking a share
//    proportional to the values it saw.
//  - Neither type is thread-safe: one per thread, merged afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace rlock::cli {

class latency_histogram {
 public:
  latency_histogram();
  void record(long long ns);
  void merge(const latency_histogram& other);
  /// Nearest-rank percentile (0 < p <= 100) in nanoseconds; 0 when empty.
  long long percentile(double p) const;
  long long max() const { return max_; }
  std::uint64_t count() const { return count_; }

 private:
  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  long long max_ = 0;
};

class latency_reservoir {
 public:
  explicit latency_reservoir(std::size_t capacity, std::uint64_t seed);
  void offer(long long ns);
  const std::vector<long long>& sample() const { return sample_; }
  std::uint64_t seen() const { return seen_; }

 private:
  std::size_t capacity_;
  std::vector<long long> sample_{};
  std::uint64_t seen_ = 0;
  std::mt19937_64 rng_;
};

/// One uniform sample of at most `capacity` values from several reservoirs.
std::vector<long long> merge_reservoirs(const std::vector<const latency_reservoir*>& parts,
                                        std::size_t capacity, std::uint64_t seed);

/// The most latency samples a bench's JSON report carries (for plots), per series.
constexpr std::size_t report_max_samples = 20'000;

/// At most `capacity` values of `values`, uniformly chosen (all of them if there are fewer).
std::vector<long long> uniform_subsample(const std::vector<long long>& values, std::size_t capacity,
                                         std::uint64_t seed);

}  // namespace rlock::cli
