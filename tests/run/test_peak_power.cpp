// SPDX-License-Identifier: MIT
// run::PeakWindow, the peak power over a fixed window, against energies worked out by hand.
#include <gtest/gtest.h>

#include "trnsim/error.hpp"
#include "trnsim/run/peak_power.hpp"

namespace trnsim::run {
namespace {

// Two samples 2 ms apart with 4 J between them: 2 kW all along, so 2 J in any 1 ms window.
TEST(PeakWindow, TwoSamplesOfKnownEnergy) {
  PeakWindow p(1e-3);
  p.add(0, 0);
  p.add(2e-3, 4);
  EXPECT_DOUBLE_EQ(p.length_s(), 1e-3);
  EXPECT_DOUBLE_EQ(p.peak_joules(), 2);
  EXPECT_DOUBLE_EQ(p.peak_watts(), 2000);  // watts, not kW or mW
}

// 1 kW for a millisecond, 4 kW for the next, 1 kW for the third: cumulative 0, 1, 5, 6 J.
TEST(PeakWindow, ABurstInAWindowOfItsLength) {
  PeakWindow p(1e-3);
  for (auto [t, e] : {std::pair{0.0, 0.0}, {1e-3, 1.0}, {2e-3, 5.0}, {3e-3, 6.0}}) p.add(t, e);
  EXPECT_DOUBLE_EQ(p.peak_joules(), 4);
  EXPECT_DOUBLE_EQ(p.peak_watts(), 4000);
}

// The same burst in a 1.5 ms window: the burst whole and half a millisecond at 1 kW, 4.5 J, in
// windows that start or end between samples ([0.5, 2] and [1, 2.5] ms).
TEST(PeakWindow, AWindowLongerThanTheBurst) {
  PeakWindow p(1.5e-3);
  for (auto [t, e] : {std::pair{0.0, 0.0}, {1e-3, 1.0}, {2e-3, 5.0}, {3e-3, 6.0}}) p.add(t, e);
  EXPECT_DOUBLE_EQ(p.peak_joules(), 4.5);
  EXPECT_DOUBLE_EQ(p.peak_watts(), 3000);
  PeakWindow two(2e-3);  // [0, 2] and [1, 3] ms: 5 J each
  for (auto [t, e] : {std::pair{0.0, 0.0}, {1e-3, 1.0}, {2e-3, 5.0}, {3e-3, 6.0}}) two.add(t, e);
  EXPECT_DOUBLE_EQ(two.peak_watts(), 2500);
}

// The burst found between coarse samples: 1 kW, then 9 kW from 1.0 to 1.1 ms, then 1 kW. Samples
// every 0.1 ms; a 0.2 ms window holds the 0.9 J burst and 0.1 ms at 1 kW: 1 J, 5 kW.
TEST(PeakWindow, FineSamplesResolveAShortBurst) {
  PeakWindow p(0.2e-3);
  double e = 0;
  for (int i = 0; i <= 30; ++i) {
    p.add(i * 1e-4, e);
    e += i == 10 ? 0.9 : 0.1;
  }
  EXPECT_NEAR(p.peak_joules(), 1.0, 1e-12);
  EXPECT_NEAR(p.peak_watts(), 5000, 1e-8);
}

// Samples spanning less than the window: the peak is the average over their span.
TEST(PeakWindow, ShorterThanTheWindowIsTheAverage) {
  PeakWindow p(1e-3);
  EXPECT_EQ(p.peak_watts(), 0);
  p.add(0, 0);
  p.add(0, 0);  // two samples at one time
  p.add(0.25e-3, 0.5);
  p.add(0.5e-3, 1);
  EXPECT_DOUBLE_EQ(p.length_s(), 0.5e-3);
  EXPECT_DOUBLE_EQ(p.peak_watts(), 2000);
  p.add(1e-3, 1);  // exactly one window: the 1 J of the first half
  EXPECT_DOUBLE_EQ(p.length_s(), 1e-3);
  EXPECT_DOUBLE_EQ(p.peak_watts(), 1000);
}

TEST(PeakWindow, RefusesTimeGoingBackAndAnEmptyWindow) {
  PeakWindow p(1e-3);
  p.add(1e-3, 0);
  EXPECT_THROW(p.add(0.5e-3, 1), InternalError);
  EXPECT_THROW(PeakWindow(0), InternalError);
}

}  // namespace
}  // namespace trnsim::run
