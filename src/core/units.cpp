// SPDX-License-Identifier: MIT
#include "trnsim/units.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <span>

#include "trnsim/error.hpp"

namespace trnsim {
namespace {

struct Unit {
  std::string_view name;
  double factor;  // multiply to get the SI base unit
};

// The first entry of each table whose value is >= 1 is used when formatting (in listed order);
// the table is ordered from largest to smallest so the output reads naturally.
constexpr std::array kBytes{
    Unit{"TiB", 1099511627776.0}, Unit{"GiB", 1073741824.0}, Unit{"MiB", 1048576.0},
    Unit{"KiB", 1024.0},          Unit{"TB", 1e12},          Unit{"GB", 1e9},
    Unit{"MB", 1e6},              Unit{"kB", 1e3},           Unit{"KB", 1e3},
    Unit{"B", 1.0},
};
constexpr std::array kBandwidth{
    Unit{"TB/s", 1e12},       Unit{"GB/s", 1e9},           Unit{"MB/s", 1e6},
    Unit{"kB/s", 1e3},        Unit{"KB/s", 1e3},           Unit{"B/s", 1.0},
    Unit{"TiB/s", 1099511627776.0}, Unit{"GiB/s", 1073741824.0}, Unit{"MiB/s", 1048576.0},
    Unit{"KiB/s", 1024.0},    Unit{"Tb/s", 1e12 / 8},      Unit{"Gb/s", 1e9 / 8},
    Unit{"Mb/s", 1e6 / 8},    Unit{"Tbps", 1e12 / 8},      Unit{"Gbps", 1e9 / 8},
    Unit{"Mbps", 1e6 / 8},
};
constexpr std::array kFrequency{
    Unit{"GHz", 1e9}, Unit{"MHz", 1e6}, Unit{"kHz", 1e3}, Unit{"Hz", 1.0},
};
constexpr std::array kDuration{
    Unit{"s", 1.0},    Unit{"ms", 1e-3}, Unit{"us", 1e-6},
    Unit{"ns", 1e-9},  Unit{"ps", 1e-12}, Unit{"\xC2\xB5s", 1e-6},
};
constexpr std::array kEnergy{
    Unit{"J", 1.0}, Unit{"mJ", 1e-3}, Unit{"uJ", 1e-6}, Unit{"nJ", 1e-9},
    Unit{"pJ", 1e-12}, Unit{"fJ", 1e-15},
};
constexpr std::array kPower{
    Unit{"kW", 1e3}, Unit{"W", 1.0}, Unit{"mW", 1e-3},
};
constexpr std::array kEnergyPerBit{
    Unit{"nJ/bit", 1e-9}, Unit{"pJ/bit", 1e-12}, Unit{"fJ/bit", 1e-15},
    Unit{"nJ/B", 1e-9 / 8}, Unit{"pJ/B", 1e-12 / 8},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

double parse_with(std::string_view text, std::span<const Unit> units, std::string_view what,
                  std::string_view example) {
  const std::string_view s = trim(text);
  double number = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  auto fail = [&]() -> double {
    throw UnitError(fmt::format("expected {} such as \"{}\", got \"{}\"", what, example, text));
  };
  if (ec != std::errc() || !std::isfinite(number)) return fail();
  const std::string_view unit = trim(std::string_view(end, s.data() + s.size() - end));
  if (unit.empty()) {
    throw UnitError(fmt::format("expected {} with a unit such as \"{}\", got the bare number \"{}\"",
                                what, example, text));
  }
  for (const Unit& u : units) {
    if (u.name == unit) {
      if (number < 0) {
        // `what` names the kind with its article ("a bandwidth"): the article moves before "non-negative".
        const std::string_view kind = what.substr(what.find(' ') + 1);
        throw UnitError(fmt::format("expected a non-negative {}, got \"{}\"", kind, text));
      }
      return number * u.factor;
    }
  }
  std::string known;
  for (const Unit& u : units) known += fmt::format("{}{}", known.empty() ? "" : ", ", u.name);
  throw UnitError(fmt::format("expected {} such as \"{}\": unknown unit \"{}\" in \"{}\" (known: {})",
                              what, example, unit, text, known));
}

// The shortest decimal number n such that n * u.factor == v exactly, if there is one.
std::optional<double> exact_scaled(double v, const Unit& u) {
  const double scaled = v / u.factor;
  for (int precision = 1; precision <= 17; ++precision) {
    const std::string text = fmt::format("{:.{}g}", scaled, precision);
    double back = 0.0;
    std::from_chars(text.data(), text.data() + text.size(), back);
    if (back * u.factor == v) return back;
  }
  return std::nullopt;
}

// The shortest exact text among `units` (ties: a number >= 1, then the earlier unit); the
// fallback unit when no unit gives an exact text.
std::string format_with(double v, std::span<const Unit> units, const Unit& fallback) {
  std::string best;
  bool best_ge1 = false;
  if (v != 0.0) {
    for (std::size_t i = 0; i <= units.size(); ++i) {
      const Unit& u = i < units.size() ? units[i] : fallback;
      const auto n = exact_scaled(v, u);
      if (!n) continue;
      std::string text = fmt::format("{}{}", *n, u.name);
      const bool ge1 = *n >= 1.0;
      if (best.empty() || text.size() < best.size() ||
          (text.size() == best.size() && ge1 && !best_ge1)) {
        best = std::move(text);
        best_ge1 = ge1;
      }
    }
  }
  if (!best.empty()) return best;
  const auto n = exact_scaled(v, fallback);
  return fmt::format("{}{}", n ? *n : v / fallback.factor, fallback.name);
}

}  // namespace

Bytes parse_bytes(std::string_view s) {
  return Bytes(parse_with(s, kBytes, "a size", "96GiB"));
}
Bandwidth parse_bandwidth(std::string_view s) {
  return Bandwidth(parse_with(s, kBandwidth, "a bandwidth", "4.9TB/s"));
}
Frequency parse_frequency(std::string_view s) {
  return Frequency(parse_with(s, kFrequency, "a frequency", "2.4GHz"));
}
Duration parse_duration(std::string_view s) {
  return Duration(parse_with(s, kDuration, "a duration", "150ns"));
}
Energy parse_energy(std::string_view s) {
  return Energy(parse_with(s, kEnergy, "an energy", "0.55nJ"));
}
Power parse_power(std::string_view s) { return Power(parse_with(s, kPower, "a power", "700W")); }
EnergyPerBit parse_energy_per_bit(std::string_view s) {
  return EnergyPerBit(parse_with(s, kEnergyPerBit, "an energy per bit", "5pJ/bit"));
}

// Formatting uses the units listed first in each table (sizes in binary units, rates decimal).
std::string format(Bytes v) { return format_with(v.si, std::span(kBytes).first(4), kBytes[9]); }
std::string format(Bandwidth v) {
  return format_with(v.si, std::span(kBandwidth).first(5), kBandwidth[5]);
}
std::string format(Frequency v) { return format_with(v.si, kFrequency, kFrequency[3]); }
std::string format(Duration v) {
  return format_with(v.si, std::span(kDuration).first(5), kDuration[4]);
}
std::string format(Energy v) { return format_with(v.si, kEnergy, kEnergy[5]); }
std::string format(Power v) { return format_with(v.si, kPower, kPower[2]); }
std::string format(EnergyPerBit v) {
  return format_with(v.si, std::span(kEnergyPerBit).first(3), kEnergyPerBit[2]);
}

template <> const char* quantity_example<Bytes>() { return "a size such as \"96GiB\""; }
template <> const char* quantity_example<Bandwidth>() { return "a bandwidth such as \"4.9TB/s\""; }
template <> const char* quantity_example<Frequency>() { return "a frequency such as \"2.4GHz\""; }
template <> const char* quantity_example<Duration>() { return "a duration such as \"150ns\""; }
template <> const char* quantity_example<Energy>() { return "an energy such as \"0.55nJ\""; }
template <> const char* quantity_example<Power>() { return "a power such as \"700W\""; }
template <> const char* quantity_example<EnergyPerBit>() {
  return "an energy per bit such as \"5pJ/bit\"";
}

template <> Bytes parse_quantity<Bytes>(std::string_view s) { return parse_bytes(s); }
template <> Bandwidth parse_quantity<Bandwidth>(std::string_view s) { return parse_bandwidth(s); }
template <> Frequency parse_quantity<Frequency>(std::string_view s) { return parse_frequency(s); }
template <> Duration parse_quantity<Duration>(std::string_view s) { return parse_duration(s); }
template <> Energy parse_quantity<Energy>(std::string_view s) { return parse_energy(s); }
template <> Power parse_quantity<Power>(std::string_view s) { return parse_power(s); }
template <> EnergyPerBit parse_quantity<EnergyPerBit>(std::string_view s) {
  return parse_energy_per_bit(s);
}

std::uint64_t whole_bytes(Bytes b) {
  const double r = std::round(b.si);
  if (std::fabs(r - b.si) > 1e-6 || r < 0 || r > 1.8e19) {
    throw UnitError(fmt::format("expected a whole number of bytes, got {}", b.si));
  }
  return static_cast<std::uint64_t>(r);
}

std::string format_si(double v, std::string_view unit, int significant) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int p = 0;
  while (std::fabs(v) >= 1000.0 && p < 6) {
    v /= 1000.0;
    ++p;
  }
  return fmt::format("{:.{}g} {}{}", v, significant, prefixes[p], unit);
}

}  // namespace trnsim
