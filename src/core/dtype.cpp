// SPDX-License-Identifier: MIT
#include "trnsim/dtype.hpp"

#include <fmt/format.h>

#include "trnsim/error.hpp"

namespace trnsim {

DType parse_dtype(std::string_view s) {
  for (const auto& [d, name] : enum_names(DType{})) {
    if (name == s) return d;
  }
  throw InputError(fmt::format(
      "unknown data type \"{}\": expected one of fp32, bf16, fp16, fp8, mxfp8, mxfp4", s));
}

std::string_view to_string(DType d) {
  for (const auto& [v, name] : enum_names(DType{})) {
    if (v == d) return name;
  }
  throw InternalError("dtype without a name");
}

double dtype_bytes(DType d) {
  switch (d) {
    case DType::fp32: return 4.0;
    case DType::bf16:
    case DType::fp16: return 2.0;
    case DType::fp8: return 1.0;
    case DType::mxfp8: return 1.0 + 1.0 / 32.0;
    case DType::mxfp4: return 0.5 + 1.0 / 32.0;
  }
  throw InternalError("dtype without a size");
}

}  // namespace trnsim
