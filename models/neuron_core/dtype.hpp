// SPDX-License-Identifier: MIT
// Data types of trace-level ops and what they cost on a NeuronCore.
#pragma once

#include <string>
#include <string_view>

#include "trnsim/config/chip_params.hpp"
#include "trnsim/units.hpp"

namespace trnsim::model {

enum class Dtype { fp32, bf16, fp16, fp8, mxfp8, mxfp4 };

// "fp8", "bf16", ...; InputError naming the accepted names otherwise.
Dtype parse_dtype(std::string_view s);
std::string_view to_string(Dtype d);

// Bytes per element in HBM/SBUF. MX types carry one 8-bit scale per 32 elements (NKI3).
double element_bytes(Dtype d);
// True when the element engines process the type at their 16-bit rate (2 bytes or fewer).
bool is_narrow(Dtype d);
double macs_per_pe_cycle(const config::DtypeRates& r, Dtype d);
Energy energy_per_mac(const config::DtypeEnergy& e, Dtype d);

}  // namespace trnsim::model
