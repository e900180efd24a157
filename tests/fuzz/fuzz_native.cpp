// SPDX-License-Identifier: MIT
// The native trace reader, and the writer on what it accepted (which must read back).
#include "fuzz_common.hpp"
#include "trnsim/trace/native.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trnsim;
  return fuzz::accept_input_errors([&] {
    const auto w = trace::parse_native(fuzz::text(data, size), "fuzz.json");
    const auto again = trace::parse_native(trace::write_native(w), "written.json");
    if (again.num_ranks() != w.num_ranks()) std::abort();
  });
}
