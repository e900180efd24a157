// SPDX-License-Identifier: MIT
#include "neuron_core/dtype.hpp"

#include <fmt/format.h>

#include "trnsim/error.hpp"

namespace trnsim::model {

Dtype parse_dtype(std::string_view s) {
  if (s == "fp32") return Dtype::fp32;
  if (s == "bf16") return Dtype::bf16;
  if (s == "fp16") return Dtype::fp16;
  if (s == "fp8") return Dtype::fp8;
  if (s == "mxfp8") return Dtype::mxfp8;
  if (s == "mxfp4") return Dtype::mxfp4;
  throw InputError(fmt::format(
      "unknown data type \"{}\": expected one of fp32, bf16, fp16, fp8, mxfp8, mxfp4", s));
}

std::string_view to_string(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8: return "fp8";
    case Dtype::mxfp8: return "mxfp8";
    case Dtype::mxfp4: return "mxfp4";
  }
  return "?";
}

double element_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32: return 4;
    case Dtype::bf16:
    case Dtype::fp16: return 2;
    case Dtype::fp8: return 1;
    case Dtype::mxfp8: return 1 + 1.0 / 32;
    case Dtype::mxfp4: return 0.5 + 1.0 / 32;
  }
  return 4;
}

bool is_narrow(Dtype d) { return d != Dtype::fp32; }

double macs_per_pe_cycle(const config::DtypeRates& r, Dtype d) {
  switch (d) {
    case Dtype::fp32: return r.fp32;
    case Dtype::bf16: return r.bf16;
    case Dtype::fp16: return r.fp16;
    case Dtype::fp8: return r.fp8;
    case Dtype::mxfp8: return r.mxfp8;
    case Dtype::mxfp4: return r.mxfp4;
  }
  return 0;
}

Energy energy_per_mac(const config::DtypeEnergy& e, Dtype d) {
  switch (d) {
    case Dtype::fp32: return e.fp32;
    case Dtype::bf16: return e.bf16;
    case Dtype::fp16: return e.fp16;
    case Dtype::fp8: return e.fp8;
    case Dtype::mxfp8: return e.mxfp8;
    case Dtype::mxfp4: return e.mxfp4;
  }
  return Energy{};
}

}  // namespace trnsim::model
