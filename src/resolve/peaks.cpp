// SPDX-License-Identifier: MIT
#include "trnsim/resolve/peaks.hpp"

#include <algorithm>

#include "trnsim/resolve/resolve.hpp"

namespace trnsim::resolve {

std::optional<DType> tensor_dtype(const config::DtypeRates& rates, DType d) {
  if (rates.at(d) > 0) return d;
  for (DType alt : kTensorSubstitutes) {
    if (rates.at(alt) > 0) return alt;
  }
  return std::nullopt;
}

ChipPeaks chip_peaks(const config::ChipParams& c) {
  ChipPeaks p;
  const auto& t = c.core.tensor;
  for (const auto& [d, name] : enum_names(DType{})) {
    (void)name;
    p.tensor_flops_per_s[std::size_t(d)] =
        double(c.cores) * t.rows * t.cols * 2.0 * t.macs_per_pe_cycle.at(d) * t.clock.si;
    p.runs_as[std::size_t(d)] = tensor_dtype(t.macs_per_pe_cycle, d);
  }
  p.hbm_bytes_per_s = c.hbm.bandwidth.si;
  p.hbm_stack_bytes_per_s = c.hbm.bandwidth.si / std::max(1, c.hbm.stacks);
  return p;
}

ChipPeaks chip_peaks(const ChipPlan& plan) { return chip_peaks(plan.params); }

}  // namespace trnsim::resolve
