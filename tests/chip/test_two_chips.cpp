// SPDX-License-Identifier: MIT
// Chips in one simulation time independently: a chip's op takes the same time whether it runs
// alone or next to other chips (a rack elaborates 144 in one process). This failed before the
// DMA engines' wake-ups went through a per-chip WakeCalendar: the kernel ran equal-time
// wake-ups in an order that depended on the other chips' events, and the HBM serves requests
// first come first served in call order (two Trn3 chips on the same 512^3 GEMM: 3.580 us and
// 3.608 us, the chip alone 3.602 us).
#include <gtest/gtest.h>

#include "chip/chip.hpp"
#include "test_support.hpp"

namespace trnsim::model {
namespace {

using test::chip_options;
using test::chip_preset;
using test::Runner;

// `trnsim bench gemm --config configs/chips/trn3.json --dtype mxfp8 --m 512 --k 512 --n 512
// --json` prints "time_s": 3.61029e-06 (one chip in the process).
constexpr std::int64_t kGemm512Ps = 3610290;

std::int64_t ps(double seconds) { return std::llround(seconds * 1e12); }

TEST(TwoChips, SameOpSameTimeAsOneChip) {
  const auto p = chip_preset("trn3");
  Chip a("a", p, chip_options(p)), b("b", p, chip_options(p));
  OpStats ra, rb;
  const GemmOp op{512, 512, 512, Dtype::mxfp8, 1};
  Runner x("x", [&] { ra = a.execute(op, "op"); });
  Runner y("y", [&] { rb = b.execute(op, "op"); });
  sc_core::sc_start();
  EXPECT_EQ(ps(ra.time_s), kGemm512Ps);
  EXPECT_EQ(ps(rb.time_s), kGemm512Ps);
}

// Another chip busy with different work at the same time does not change a chip's timing.
TEST(TwoChips, OtherChipsTrafficDoesNotChangeTiming) {
  const auto p = chip_preset("trn3");
  Chip a("a", p, chip_options(p)), b("b", p, chip_options(p));
  OpStats ra;
  Runner x("x", [&] { ra = a.execute(GemmOp{512, 512, 512, Dtype::mxfp8, 1}, "op"); });
  Runner y("y", [&] {
    b.execute(ElementOp{ElementKind::elementwise, 1u << 22, Dtype::bf16, 2}, "noise");
  });
  sc_core::sc_start();
  EXPECT_EQ(ps(ra.time_s), kGemm512Ps);
}

}  // namespace
}  // namespace trnsim::model
