#include "bench_latency.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace rlock::cli {
namespace {

constexpr int sub_bits = 10;  // 1024 sub-buckets per power of two
constexpr std::uint64_t sub_count = 1ULL << sub_bits;
constexpr std::size_t bucket_count = (64 - sub_bits + 1) * (sub_count / 2) + sub_count / 2;

std::size_t bucket_of(std::uint64_t v) {
  if (v < sub_count) return static_cast<std::size_t>(v);
  const int shift = static_cast<int>(std::bit_width(v)) - sub_bits;  // v >> shift in [512, 1023]
  return static_cast<std::size_t>(shift) * (sub_count / 2) + static_cast<std::size_t>(v >> shift);
}

/// The midpoint of the values that fall into bucket `b`.
long long value_of(std::size_t b) {
  if (b < sub_count) return static_cast<long long>(b);
  const std::size_t shift = (b - sub_count / 2) / (sub_count / 2);
  const std::uint64_t top = b - shift * (sub_count / 2);
  const std::uint64_t low = top << shift;
  return static_cast<long long>(low + ((1ULL << shift) >> 1));
}

}  // namespace

latency_histogram::latency_histogram() : buckets_(bucket_count, 0) {}

void latency_histogram::record(long long ns) {
  const auto v = static_cast<std::uint64_t>(std::max(ns, 0LL));
  ++buckets_[bucket_of(v)];
  ++count_;
  max_ = std::max(max_, ns);
}

void latency_histogram::merge(const latency_histogram& other) {
  for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  max_ = std::max(max_, other.max_);
}

long long latency_histogram::percentile(double p) const {
  if (count_ == 0) return 0;
  const double rank = std::ceil(p / 100.0 * static_cast<double>(count_));
  const auto target = static_cast<std::uint64_t>(std::max(1.0, rank));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= target) return std::min(value_of(b), max_);
  }
  return max_;
}

latency_reservoir::latency_reservoir(std::size_t capacity, std::uint64_t seed)
    : capacity_(capacity), rng_(seed) {
  sample_.reserve(std::min<std::size_t>(capacity, 4096));
}

void latency_reservoir::offer(long long ns) {
  ++seen_;
  if (sample_.size() < capacity_) {
    sample_.push_back(ns);
    return;
  }
  std::uniform_int_distribution<std::uint64_t> pick(0, seen_ - 1);
  const std::uint64_t slot = pick(rng_);
  if (slot < capacity_) sample_[static_cast<std::size_t>(slot)] = ns;
}

std::vector<long long> uniform_subsample(const std::vector<long long>& values, std::size_t capacity,
                                         std::uint64_t seed) {
  std::vector<long long> out = values;
  if (out.size() <= capacity) return out;
  std::mt19937_64 rng(seed);
  // Partial Fisher-Yates: the first `capacity` entries become a uniform sample.
  for (std::size_t i = 0; i < capacity; ++i) {
    std::uniform_int_distribution<std::size_t> pick(i, out.size() - 1);
    std::swap(out[i], out[pick(rng)]);
  }
  out.resize(capacity);
  return out;
}

std::vector<long long> merge_reservoirs(const std::vector<const latency_reservoir*>& parts,
                                        std::size_t capacity, std::uint64_t seed) {
  std::uint64_t total = 0;
  for (const auto* r : parts) total += r->seen();
  std::vector<long long> out;
  if (total == 0) return out;
  const double scale = std::min(1.0, static_cast<double>(capacity) / static_cast<double>(total));
  for (const auto* r : parts) {
    const auto share = static_cast<std::size_t>(std::floor(static_cast<double>(r->seen()) * scale));
    const auto part = uniform_subsample(r->sample(), share, seed++);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

}  // namespace rlock::cli
