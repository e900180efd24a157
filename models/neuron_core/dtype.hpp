// SPDX-License-Identifier: MIT
// What the data types of ops cost on a NeuronCore.
#pragma once

#include <string>
#include <string_view>

#include "trnsim/params/chip.hpp"
#include "trnsim/dtype.hpp"
#include "trnsim/units.hpp"

namespace trnsim::model {

// The one data-type vocabulary (trnsim/dtype.hpp), under the models' name for it.
using Dtype = trnsim::DType;
using trnsim::dtype_bytes;
using trnsim::parse_dtype;
using trnsim::to_string;
// True when the element engines process the type at their 16-bit rate (2 bytes or fewer).
bool is_narrow(Dtype d);
double macs_per_pe_cycle(const config::DtypeRates& r, Dtype d);
Energy energy_per_mac(const config::DtypeEnergy& e, Dtype d);

}  // namespace trnsim::model
