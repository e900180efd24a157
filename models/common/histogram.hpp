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
  double sum() const {
    double s = 0;
    for (double v : values_) s += v;
    return s;
  }
  double mean() const { return empty() ? 0.0 : sum() / double(count()); }
  // Nearest rank: the smallest sample with at least a fraction q of the samples at or below it
  // (q = 0 gives the minimum, 1 the maximum); 0 for no samples.
  double quantile(double q) const {
    if (empty()) return 0;
    const std::vector<double>& v = sorted();
    const auto rank = std::size_t(std::ceil(q * double(v.size())));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
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
