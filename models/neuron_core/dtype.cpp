// SPDX-License-Identifier: MIT
#include "neuron_core/dtype.hpp"

#include <fmt/format.h>

#include "trnsim/error.hpp"

namespace trnsim::model {

bool is_narrow(Dtype d) { return d != Dtype::fp32; }

double macs_per_pe_cycle(const config::DtypeRates& r, Dtype d) { return r.at(d); }

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
