// SPDX-License-Identifier: MIT
// Small value types for physical quantities, parsed from strings with units ("4.9TB/s").
// Each stores one double in SI base units, so mixing a bandwidth with a frequency does not compile.
// Decimal prefixes (k, M, G, T) are powers of 1000, binary ones (Ki, Mi, Gi, Ti) powers of 1024.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trnsim {

template <class Tag>
struct Quantity {
  double si = 0.0;  // value in the SI base unit of Tag
  constexpr Quantity() = default;
  constexpr explicit Quantity(double v) : si(v) {}
  constexpr auto operator<=>(const Quantity&) const = default;
  constexpr Quantity operator+(Quantity o) const { return Quantity(si + o.si); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(si - o.si); }
  constexpr Quantity operator*(double k) const { return Quantity(si * k); }
  constexpr Quantity operator/(double k) const { return Quantity(si / k); }
  constexpr double operator/(Quantity o) const { return si / o.si; }
};

struct BytesTag {};         // B
struct BandwidthTag {};     // B/s
struct FrequencyTag {};     // Hz
struct DurationTag {};      // s
struct EnergyTag {};        // J
struct PowerTag {};         // W
struct EnergyPerBitTag {};  // J/bit

using Bytes = Quantity<BytesTag>;
using Bandwidth = Quantity<BandwidthTag>;
using Frequency = Quantity<FrequencyTag>;
using Duration = Quantity<DurationTag>;
using Energy = Quantity<EnergyTag>;
using Power = Quantity<PowerTag>;
using EnergyPerBit = Quantity<EnergyPerBitTag>;

// Convenience constructors for code and tests.
namespace literals {
constexpr Bytes operator""_B(unsigned long long v) { return Bytes(double(v)); }
constexpr Bytes operator""_KiB(unsigned long long v) { return Bytes(double(v) * 1024.0); }
constexpr Bytes operator""_MiB(unsigned long long v) { return Bytes(double(v) * 1048576.0); }
constexpr Bytes operator""_GiB(unsigned long long v) { return Bytes(double(v) * 1073741824.0); }
constexpr Duration operator""_ns(long double v) { return Duration(double(v) * 1e-9); }
constexpr Duration operator""_ns(unsigned long long v) { return Duration(double(v) * 1e-9); }
constexpr Duration operator""_us(unsigned long long v) { return Duration(double(v) * 1e-6); }
constexpr Bandwidth operator""_GBps(long double v) { return Bandwidth(double(v) * 1e9); }
constexpr Bandwidth operator""_GBps(unsigned long long v) { return Bandwidth(double(v) * 1e9); }
constexpr Frequency operator""_GHz(long double v) { return Frequency(double(v) * 1e9); }
}  // namespace literals

// Time to move `b` at rate `bw`.
constexpr Duration transfer_time(Bytes b, Bandwidth bw) { return Duration(b.si / bw.si); }
// Cycles of clock `f` in `d`.
constexpr double cycles(Duration d, Frequency f) { return d.si * f.si; }
constexpr Duration cycle_time(Frequency f) { return Duration(1.0 / f.si); }
constexpr Energy energy(Power p, Duration d) { return Energy(p.si * d.si); }
constexpr Energy energy(EnergyPerBit e, Bytes b) { return Energy(e.si * b.si * 8.0); }

// Parse "<number><unit>" (spaces allowed between). Throws UnitError naming what was expected.
Bytes parse_bytes(std::string_view s);
Bandwidth parse_bandwidth(std::string_view s);
Frequency parse_frequency(std::string_view s);
Duration parse_duration(std::string_view s);
Energy parse_energy(std::string_view s);
Power parse_power(std::string_view s);
EnergyPerBit parse_energy_per_bit(std::string_view s);

template <class Q>
Q parse_quantity(std::string_view s);

// Canonical text that parses back to exactly the same value.
std::string format(Bytes v);
std::string format(Bandwidth v);
std::string format(Frequency v);
std::string format(Duration v);
std::string format(Energy v);
std::string format(Power v);
std::string format(EnergyPerBit v);
// A plain number with a decimal SI prefix and `unit`, to `significant` digits ("2.98 PFLOPS").
std::string format_si(double v, std::string_view unit, int significant);

// What a quantity of this kind looks like, for error messages ("a bandwidth such as \"4.9TB/s\"").
template <class Q>
const char* quantity_example();

// Integral byte count; throws UnitError when the value is not a whole number of bytes.
std::uint64_t whole_bytes(Bytes b);

}  // namespace trnsim
