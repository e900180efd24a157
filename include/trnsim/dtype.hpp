// SPDX-License-Identifier: MIT
// The data types of ops, one vocabulary for traces, the config and the models.
#pragma once

#include <array>
#include <string_view>
#include <utility>

namespace trnsim {

enum class DType { fp32, bf16, fp16, fp8, mxfp8, mxfp4 };

// Names as traces and the config write them (config::enum_name finds this by ADL).
constexpr auto enum_names(DType) {
  using S = std::string_view;
  return std::array{std::pair{DType::fp32, S("fp32")},   std::pair{DType::bf16, S("bf16")},
                    std::pair{DType::fp16, S("fp16")},   std::pair{DType::fp8, S("fp8")},
                    std::pair{DType::mxfp8, S("mxfp8")}, std::pair{DType::mxfp4, S("mxfp4")}};
}

// "fp8", "bf16", ...; InputError naming the accepted names otherwise.
DType parse_dtype(std::string_view s);
std::string_view to_string(DType d);

// Storage per element in HBM/SBUF, including the shared scale of MX formats (one 8-bit scale per
// 32 elements, NKI).
double dtype_bytes(DType d);

}  // namespace trnsim
