// SPDX-License-Identifier: MIT
// What a chip of a plan can do at most: its Tensor engines' dense FLOP/s per data type and its
// HBM bandwidth, and the type each data type runs as on it. The rack converts ops with the same
// substitution (src/run/compute_ops.cpp) that the report divides by (src/report/report.cpp), so
// "fraction of peak" is always against the type that ran.
#pragma once

#include <array>
#include <cstddef>
#include <optional>

#include "trnsim/params/chip.hpp"
#include "trnsim/dtype.hpp"

namespace trnsim::resolve {

struct ChipPlan;  // resolve.hpp

// An op of a type the chip's Tensor engines lack runs as the first of these the chip has (a
// trace written for another generation still runs, and the report says so).
inline constexpr std::array<DType, 3> kTensorSubstitutes{DType::mxfp8, DType::fp8, DType::bf16};

inline constexpr std::size_t kDTypeCount = enum_names(DType{}).size();

struct ChipPeaks {
  // Dense Tensor-engine FLOP/s of the whole chip by type (index: the DType), cores x rows x cols
  // x 2 x MACs per PE per cycle x clock; 0 where the chip lacks the type.
  std::array<double, kDTypeCount> tensor_flops_per_s{};
  // The type an op of each type runs as on the Tensor engines: itself when the chip has it, else
  // the first of kTensorSubstitutes it has; none when it has none of them.
  std::array<std::optional<DType>, kDTypeCount> runs_as{};
  double hbm_bytes_per_s = 0;        // /chip/hbm/bandwidth: all stacks
  double hbm_stack_bytes_per_s = 0;  // one stack's share

  double tensor(DType d) const { return tensor_flops_per_s[std::size_t(d)]; }
  std::optional<DType> ran_as(DType d) const { return runs_as[std::size_t(d)]; }
};

// The peaks of the chip of `plan` (its parameters as the models are built from them).
ChipPeaks chip_peaks(const ChipPlan& plan);
// The same from parameters (benchmarks of a chip preset as written, tests).
ChipPeaks chip_peaks(const config::ChipParams& params);

// The substitution of ChipPeaks::runs_as for one type, from the Tensor rates alone (the rack
// converts every op with it).
std::optional<DType> tensor_dtype(const config::DtypeRates& rates, DType d);

}  // namespace trnsim::resolve
