// SPDX-License-Identifier: MIT
// A distribution statistic (latencies): every sample kept, quantiles by nearest rank. One type
// for the rack's transfer latencies, the fabric benchmarks and the report.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace trnsim::model {

// The index of the nearest-rank q-quantile among n sorted samples (n >= 1): the smallest sample
// with at least a fraction q of the samples at or below it.
inline std::size_t nearest_rank_index(std::size_t n, double q) {
  const auto rank = std::size_t(std::ceil(q * double(n)));
  return std::min(n - 1, rank == 0 ? 0 : rank - 1);
}

// The nearest-rank q-quantile of `v` (not empty) without sorting it all: reorders `v` as
// std::nth_element does. Quantiles asked for in increasing order may pass the index of the one
// before as `from` (elements before it are then already in place). For samples that run to
// hundreds of millions (the packets of a detailed step), where a sorted copy was seconds and
// gigabytes.
inline double nearest_rank_in_place(std::vector<double>& v, double q, std::size_t from = 0) {
  const std::size_t i = nearest_rank_index(v.size(), q);
  std::nth_element(v.begin() + std::ptrdiff_t(std::min(from, i)), v.begin() + std::ptrdiff_t(i),
                   v.end());
  return v[i];
}

class Histogram {
 public:
  Histogram() = default;
  explicit Histogram(std::vector<double> samples) : values_(std::move(samples)) {}
  void add(double v) {
    values_.push_back(v);
    sorted_ = false;
  }
  std::size_t count() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  double sum() const { return sum_of(values_); }
  double mean() const { return mean_of(values_); }
  // The sum and mean of samples in their order (so that every user sums alike).
  static double sum_of(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s;
  }
  static double mean_of(const std::vector<double>& v) {
    return v.empty() ? 0.0 : sum_of(v) / double(v.size());
  }
  // Nearest rank: the smallest sample with at least a fraction q of the samples at or below it
  // (q = 0 gives the minimum, 1 the maximum); 0 for no samples.
  double quantile(double q) const {
    if (empty()) return 0;
    const std::vector<double>& v = sorted();
    return v[nearest_rank_index(v.size(), q)];
  }
  double max() const { return quantile(1); }
  // Samples in the order they were added.
  const std::vector<double>& values() const { return values_; }

 private:
  const std::vector<double>& sorted() const {
    if (!sorted_) {
      sorted_values_ = values_;
      std::sort(sorted_values_.begin(), sorted_values_.end());
      sorted_ = true;
    }
    return sorted_values_;
  }
  std::vector<double> values_;
  mutable std::vector<double> sorted_values_;  // a cache of values_, sorted
  mutable bool sorted_ = false;
};

}  // namespace trnsim::model
