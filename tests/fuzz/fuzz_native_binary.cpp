// SPDX-License-Identifier: MIT
// The binary form of the native trace format: the reader, and the writer on what it accepted
// (which must read back to the same bytes). The input's last 4 bytes are set to the CRC-32 of the
// rest first, so mutations reach the checks after the checksum (validation) instead of stopping
// at a checksum mismatch; the checksum's own check is a unit test.
#include <zlib.h>

#include "fuzz_common.hpp"
#include "trnsim/trace/native.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trnsim;
  std::string in = fuzz::text(data, size);
  if (in.size() >= 4) {
    auto crc = static_cast<std::uint32_t>(
        crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(in.data()), static_cast<uInt>(in.size() - 4)));
    for (std::size_t i = in.size() - 4; i < in.size(); ++i, crc >>= 8) in[i] = static_cast<char>(crc & 0xff);
  }
  return fuzz::accept_input_errors([&] {
    const auto w = trace::parse_native_binary(in, "fuzz.trnb");
    const std::string bin = trace::write_native_binary(w);
    const auto again = trace::parse_native_binary(bin, "written.trnb");
    if (trace::write_native_binary(again) != bin) std::abort();
    if (trace::write_native(again) != trace::write_native(w)) std::abort();
  });
}
