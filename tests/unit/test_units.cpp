// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "trnsim/error.hpp"
#include "trnsim/units.hpp"

using namespace trnsim;

TEST(Units, ParsesDecimalAndBinaryPrefixes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("4.9TB/s").si, 4.9e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("128 GB/s").si, 128e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("64Gb/s").si, 8e9);  // bits
  EXPECT_DOUBLE_EQ(parse_bandwidth("2048GiB/s").si, 2048.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bytes("96GiB").si, 96.0 * 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bytes("224KiB").si, 224.0 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("1MB").si, 1e6);
  EXPECT_DOUBLE_EQ(parse_frequency("2.4GHz").si, 2.4e9);
  EXPECT_DOUBLE_EQ(parse_duration("150ns").si, 150e-9);
  EXPECT_DOUBLE_EQ(parse_duration("3.9us").si, 3.9e-6);
  EXPECT_DOUBLE_EQ(parse_energy("0.55nJ").si, 0.55e-9);
  EXPECT_DOUBLE_EQ(parse_power("700W").si, 700.0);
  EXPECT_DOUBLE_EQ(parse_energy_per_bit("5pJ/bit").si, 5e-12);
  EXPECT_DOUBLE_EQ(parse_energy_per_bit("8pJ/B").si, 1e-12);
}

TEST(Units, RejectsBareNumbersWrongUnitsAndGarbage) {
  EXPECT_THROW(parse_bandwidth("4.9"), UnitError);
  EXPECT_THROW(parse_bandwidth("4.9TB"), UnitError);  // a size, not a bandwidth
  EXPECT_THROW(parse_frequency("four"), UnitError);
  EXPECT_THROW(parse_duration("-1ns"), UnitError);
  EXPECT_THROW(parse_duration(""), UnitError);
  try {
    parse_bandwidth("4.9");
    FAIL();
  } catch (const UnitError& e) {
    EXPECT_NE(std::string(e.what()).find("bare number"), std::string::npos) << e.what();
  }
  try {
    parse_bandwidth("4.9TB");
    FAIL();
  } catch (const UnitError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown unit \"TB\""), std::string::npos) << e.what();
  }
  try {
    parse_bandwidth("-19.3GB/s");
    FAIL();
  } catch (const UnitError& e) {
    EXPECT_EQ(std::string(e.what()), "expected a non-negative bandwidth, got \"-19.3GB/s\"");
  }
}

TEST(Units, FormatRoundTripsExactly) {
  for (const char* s : {"4.9TB/s", "128GB/s", "0.3GB/s", "46.4TB/s", "27.2GB/s"}) {
    SCOPED_TRACE(s);
    EXPECT_EQ(parse_bandwidth(format(parse_bandwidth(s))), parse_bandwidth(s));
  }
  EXPECT_EQ(format(parse_bandwidth("4.9TB/s")), "4.9TB/s");
  EXPECT_EQ(format(parse_bandwidth("64Gb/s")), "8GB/s");
  EXPECT_EQ(format(parse_bytes("96GiB")), "96GiB");
  EXPECT_EQ(format(parse_bytes("1000B")), "1000B");
  EXPECT_EQ(format(parse_frequency("0.96GHz")), "960MHz");
  EXPECT_EQ(format(parse_duration("1.3us")), "1.3us");
  EXPECT_EQ(format(parse_power("700W")), "700W");
  // 0.82 * 1e-12 / 1e-12 is not 0.82 in binary floating point; the text must still be 0.82pJ.
  EXPECT_EQ(format(parse_energy("0.82pJ")), "0.82pJ");
  EXPECT_EQ(format(parse_energy_per_bit("0.065pJ/bit")), "65fJ/bit");
  const Duration odd(1.0 / 3.0 * 1e-9);
  EXPECT_EQ(parse_duration(format(odd)), odd);
}

TEST(Units, DerivedQuantities) {
  using namespace trnsim::literals;
  // 32 KiB at 23 GB/s: 32768 / 23e9 s = 1424.7 ns
  EXPECT_NEAR(transfer_time(32_KiB, 23_GBps).si * 1e9, 1424.695652, 1e-5);
  EXPECT_DOUBLE_EQ(cycles(Duration(1e-6), Frequency(2.4e9)), 2400.0);
  EXPECT_DOUBLE_EQ(energy(EnergyPerBit(5e-12), Bytes(1)).si, 40e-12);
  EXPECT_EQ(whole_bytes(Bytes(4096)), 4096u);
  EXPECT_THROW(whole_bytes(Bytes(1.5)), UnitError);
}
