// SPDX-License-Identifier: MIT
// Resolved parameters of one Trainium chip. Hardware facts are Required (every chip preset gives
// them, citing its source in docs/configuration.md); modelling knobs have their default here.
#pragma once

#include <string>

#include "trnsim/dtype.hpp"
#include "trnsim/params/describe.hpp"
#include "trnsim/units.hpp"

namespace trnsim::config {

// Multiply-accumulates per processing element per Tensor-engine cycle, per data type;
// 0 means the chip does not support the type.
// A processing element does a few MACs per cycle (Trn2: 1 at BF16, 4 at FP8); more than this is a
// typo, and would overflow the cycle arithmetic of the Tensor engine.
inline constexpr double kMaxMacsPerPeCycle = 1024;
// Clocks between 1 MHz and 1 THz: the kernel counts picoseconds, so a faster clock has no whole
// cycle, and a slower one makes any step longer than a run can be.
inline constexpr InRange kClockRange{1e6, 1e12};
// Counts of hardware units (cores, engines, banks, ...): far above any chip, far below what would
// exhaust memory when each becomes a SystemC module.
inline constexpr InRange kUnitCount{1, 4096};
// Cycle counts of a pipeline stage or timing constraint.
inline constexpr AtMost kMaxCycles{1e6};

struct DtypeRates {
  double fp32 = 0, bf16 = 0, fp16 = 0, fp8 = 0, mxfp8 = 0, mxfp4 = 0;
  // The rate of `d` (the field of that name).
  constexpr double at(DType d) const {
    switch (d) {
      case DType::fp32: return fp32;
      case DType::bf16: return bf16;
      case DType::fp16: return fp16;
      case DType::fp8: return fp8;
      case DType::mxfp8: return mxfp8;
      case DType::mxfp4: return mxfp4;
    }
    return 0;
  }
  template <class V>
  void visit(V& v) {
    v.field("fp32", fp32, "FP32 MACs per PE per cycle", InRange{0, kMaxMacsPerPeCycle});
    v.field("bf16", bf16, "BF16 MACs per PE per cycle", InRange{0, kMaxMacsPerPeCycle});
    v.field("fp16", fp16, "FP16 MACs per PE per cycle", InRange{0, kMaxMacsPerPeCycle});
    v.field("fp8", fp8, "FP8 (E4M3/E5M2) MACs per PE per cycle", InRange{0, kMaxMacsPerPeCycle});
    v.field("mxfp8", mxfp8, "MXFP8 (OCP MX) MACs per PE per cycle", InRange{0, kMaxMacsPerPeCycle});
    v.field("mxfp4", mxfp4, "MXFP4 MACs per PE per cycle", InRange{0, kMaxMacsPerPeCycle});
  }
};

// Energy per MAC, per data type.
struct DtypeEnergy {
  Energy fp32{}, bf16{}, fp16{}, fp8{}, mxfp8{}, mxfp4{};
  template <class V>
  void visit(V& v) {
    v.field("fp32", fp32, "energy per FP32 MAC");
    v.field("bf16", bf16, "energy per BF16 MAC");
    v.field("fp16", fp16, "energy per FP16 MAC");
    v.field("fp8", fp8, "energy per FP8 MAC");
    v.field("mxfp8", mxfp8, "energy per MXFP8 MAC");
    v.field("mxfp4", mxfp4, "energy per MXFP4 MAC");
  }
};

struct PowerRamp {
  bool enabled = true;
  double start_fraction = 0.5;
  Duration ramp_time = Duration(3e-6);
  Duration dip_window = Duration(3e-6);
  template <class V>
  void visit(V& v) {
    v.field("enabled", enabled, "model the Tensor engine dI/dt throttle");
    v.field("start_fraction", start_fraction, "fraction of peak rate when the engine starts",
            InRange{0.01, 1});
    v.field("ramp_time", ramp_time, "time from start_fraction to full rate", AtLeast{0});
    v.field("dip_window", dip_window,
            "idle window after which the throttle re-engages", AtLeast{0});
  }
};

struct TensorEngineParams {
  Frequency clock{};
  int rows = 128;
  int cols = 128;
  int moving_free_max = 512;      // elements of the moving tensor's free dimension per matmul
  int matmul_min_ii_cycles = 64;  // minimum initiation interval of one matmul instruction
  int stationary_load_cycles = 32;
  int fixed_overhead_cycles = 64;  // pipeline fill/drain per dependent instruction
  DtypeRates macs_per_pe_cycle{};
  DtypeEnergy energy_per_mac{};
  PowerRamp power_ramp{};
  template <class V>
  void visit(V& v) {
    v.field("clock", clock, "Tensor engine clock", Required{}, kClockRange);
    v.field("rows", rows, "systolic array rows (contraction, partitions)", kUnitCount);
    v.field("cols", cols, "systolic array columns (stationary free size)", kUnitCount);
    v.field("moving_free_max", moving_free_max, "largest moving free size per matmul",
            InRange{1, 65536});
    v.field("matmul_min_ii_cycles", matmul_min_ii_cycles,
            "minimum initiation interval of a matmul instruction, in cycles", AtLeast{1}, kMaxCycles);
    v.field("stationary_load_cycles", stationary_load_cycles,
            "cycles to load a stationary tile (background load)", AtLeast{0}, kMaxCycles);
    v.field("fixed_overhead_cycles", fixed_overhead_cycles,
            "pipeline fill and drain of a dependent instruction, in cycles", AtLeast{0}, kMaxCycles);
    v.field("macs_per_pe_cycle", macs_per_pe_cycle, "MAC rate per PE per cycle by data type",
            Required{});
    v.field("energy_per_mac", energy_per_mac, "energy per MAC by data type", Required{});
    v.field("power_ramp", power_ramp, "dI/dt throttle of the Tensor engine");
  }
};

// Vector, Scalar and GpSimd engines: lanes of elements per cycle at their own clock.
struct ElementEngineParams {
  Frequency clock{};
  int elements_per_cycle_16bit = 128;  // BF16/FP16/FP8 elements per cycle
  int elements_per_cycle_32bit = 128;  // FP32 elements per cycle
  int fixed_overhead_cycles = 100;     // static overhead of a dependent instruction
  Energy energy_per_element{};
  template <class V>
  void visit(V& v) {
    v.field("clock", clock, "engine clock", Required{}, kClockRange);
    v.field("elements_per_cycle_16bit", elements_per_cycle_16bit,
            "16-bit (and 8-bit) elements processed per cycle", InRange{1, 65536});
    v.field("elements_per_cycle_32bit", elements_per_cycle_32bit,
            "32-bit elements processed per cycle", InRange{1, 65536});
    v.field("fixed_overhead_cycles", fixed_overhead_cycles,
            "static overhead of a dependent instruction, in cycles", AtLeast{0}, kMaxCycles);
    v.field("energy_per_element", energy_per_element, "energy per element operation",
            Required{});
  }
};

struct SramParams {
  int partitions = 128;
  Bytes bytes_per_partition{};
  int banks = 1;
  EnergyPerBit read_energy{};
  EnergyPerBit write_energy{};
  template <class V>
  void visit(V& v) {
    v.field("partitions", partitions, "partitions (rows of the array)", kUnitCount);
    v.field("bytes_per_partition", bytes_per_partition, "capacity of one partition", Required{}, Positive{});
    v.field("banks", banks, "independently accumulating banks", kUnitCount);
    v.field("read_energy", read_energy, "read energy per bit", Required{});
    v.field("write_energy", write_energy, "write energy per bit", Required{});
  }
};

struct DmaParams {
  int engines = 16;
  int queues_per_engine = 16;
  Bandwidth engine_bandwidth{};  // practical per-engine rate
  Duration start_latency{};      // semaphore to first byte
  Duration descriptor_cost{};    // per DMA instruction (descriptor generation)
  Bytes packet_bytes = Bytes(2048);
  int outstanding_packets = 8;  // modelling knob: request window of one engine
  EnergyPerBit energy{};
  template <class V>
  void visit(V& v) {
    v.field("engines", engines, "DMA engines per NeuronCore", kUnitCount);
    v.field("queues_per_engine", queues_per_engine, "queues (rings) per DMA engine", kUnitCount);
    v.field("engine_bandwidth", engine_bandwidth, "practical bandwidth of one DMA engine",
            Required{}, Positive{});
    v.field("start_latency", start_latency, "fixed cost from semaphore to transfer start",
            Required{}, AtLeast{0});
    v.field("descriptor_cost", descriptor_cost, "cost of generating one DMA instruction",
            Required{}, AtLeast{0});
    v.field("packet_bytes", packet_bytes, "round-robin granularity between queues", Positive{});
    v.field("outstanding_packets", outstanding_packets,
            "packets one DMA engine keeps in flight; also the packets moved per simulation event",
            InRange{1, 65536});
    v.field("energy", energy, "on-chip transport energy per bit (NoC)", Required{});
  }
};

struct CoreParams {
  TensorEngineParams tensor{};
  ElementEngineParams vector{}, scalar{}, gpsimd{};
  SramParams sbuf{}, psum{};
  DmaParams dma{};
  template <class V>
  void visit(V& v) {
    v.field("tensor", tensor, "Tensor engine (systolic array)", Required{});
    v.field("vector", vector, "Vector engine", Required{});
    v.field("scalar", scalar, "Scalar (activation) engine", Required{});
    v.field("gpsimd", gpsimd, "GpSimd engine", Required{});
    v.field("sbuf", sbuf, "state buffer (SBUF)", Required{});
    v.field("psum", psum, "partial-sum buffer (PSUM)", Required{});
    v.field("dma", dma, "DMA engines of one core", Required{});
  }
};

// HBM timings in nanoseconds (converted to clock cycles of the derived command clock).
struct HbmTiming {
  Duration tCL{}, tRCD{}, tRP{}, tRAS{}, tRC{}, tWR{}, tCWL{}, tRRD_S{}, tRRD_L{}, tFAW{},
      tWTR_S{}, tWTR_L{}, tRTP{}, tRFC{}, tREFI{};
  // Per-bank (single-bank) refresh; defaults are the HBM3E 12-Hi values of
  // ../shared/specs/energy-and-timing.md section 2.3 (Ramulator 2 HBM3 by constant ns).
  Duration tRFCsb = Duration(200e-9), tREFIsb = Duration(82e-9), tRREFD = Duration(8.1e-9);
  int tCCD_S_ck = 2, tCCD_L_ck = 4, burst_ck = 2;
  // Read data end to write data start on one pseudo-channel: Ramulator 2's HBM3 RD-to-WR spacing
  // tCL + burst + 2 - tCWL ("assuming tWPRE = 1 tCK").
  int tRTW_ck = 2;
  template <class V>
  void visit(V& v) {
    v.field("tCL", tCL, "read latency (CAS)", Required{}, AtLeast{0});
    v.field("tRCD", tRCD, "activate to read/write", Required{}, AtLeast{0});
    v.field("tRP", tRP, "precharge to activate", Required{}, AtLeast{0});
    v.field("tRAS", tRAS, "activate to precharge", Required{}, AtLeast{0});
    v.field("tRC", tRC, "activate to activate, same bank", Required{}, AtLeast{0});
    v.field("tWR", tWR, "write recovery", Required{}, AtLeast{0});
    v.field("tCWL", tCWL, "write latency", Required{}, AtLeast{0});
    v.field("tRRD_S", tRRD_S, "activate to activate, different bank group", Required{}, AtLeast{0});
    v.field("tRRD_L", tRRD_L, "activate to activate, same bank group", Required{}, AtLeast{0});
    v.field("tFAW", tFAW, "four-activate window", Required{}, AtLeast{0});
    v.field("tWTR_S", tWTR_S, "write to read, different bank group", Required{}, AtLeast{0});
    v.field("tWTR_L", tWTR_L, "write to read, same bank group", Required{}, AtLeast{0});
    v.field("tRTP", tRTP, "read to precharge", Required{}, AtLeast{0});
    v.field("tRFC", tRFC, "all-bank refresh cycle time", Required{}, AtLeast{0});
    v.field("tREFI", tREFI, "refresh interval", Required{}, AtLeast{0});
    // At least the kernel's 1 ps: a shorter refresh is no time at all ("1e-30ns").
    v.field("tRFCsb", tRFCsb, "per-bank refresh cycle time (refresh_mode per_bank)", AtLeast{1e-12});
    v.field("tREFIsb", tREFIsb,
            "interval between per-bank refreshes of one pseudo-channel (refresh_mode per_bank)",
            AtLeast{1e-12});
    v.field("tRREFD", tRREFD,
            "per-bank refresh to activate of another bank, same SID (refresh_mode per_bank)",
            AtLeast{0});
    v.field("tCCD_S_ck", tCCD_S_ck, "column to column, different bank group (clocks)",
            AtLeast{1}, kMaxCycles);
    v.field("tCCD_L_ck", tCCD_L_ck, "column to column, same bank group (clocks)", AtLeast{1}, kMaxCycles);
    v.field("burst_ck", burst_ck, "clocks one burst occupies the data bus", AtLeast{1}, kMaxCycles);
    v.field("tRTW_ck", tRTW_ck,
            "data-bus gap from read data to write data on one pseudo-channel (clocks)", AtLeast{0},
            kMaxCycles);
  }
};

struct HbmEnergy {
  Energy activate_precharge{};
  EnergyPerBit read{}, write{}, phy{}, controller{};
  Energy refresh_per_channel{};
  Power background_per_stack{};
  template <class V>
  void visit(V& v) {
    v.field("activate_precharge", activate_precharge, "energy of one ACT+PRE pair (one row)",
            Required{});
    v.field("read", read, "DRAM read energy per bit", Required{});
    v.field("write", write, "DRAM write energy per bit", Required{});
    v.field("phy", phy, "host PHY energy per bit", Required{});
    v.field("controller", controller, "memory controller energy per bit", Required{});
    v.field("refresh_per_channel", refresh_per_channel, "energy of one all-bank refresh",
            Required{});
    v.field("background_per_stack", background_per_stack, "standby power per stack",
            Required{});
  }
};

enum class PagePolicy { open, closed };
constexpr auto enum_names(PagePolicy) {
  return std::array{std::pair{PagePolicy::open, std::string_view("open")},
                    std::pair{PagePolicy::closed, std::string_view("closed")}};
}

// all_bank: REFab, a whole channel blocked for tRFC every tREFI. per_bank: REFsb, one bank of a
// pseudo-channel blocked for tRFCsb every tREFIsb, the others usable (docs/models/hbm.md).
enum class RefreshMode { all_bank, per_bank };
constexpr auto enum_names(RefreshMode) {
  return std::array{std::pair{RefreshMode::all_bank, std::string_view("all_bank")},
                    std::pair{RefreshMode::per_bank, std::string_view("per_bank")}};
}

// How the digits of an address are chosen (docs/models/hbm.md#address-map); all are bijections
// that keep the row and the column. none: straight from the address. bank: permutation-based
// interleaving (Zhang, Zhu, Zhang, MICRO 2000): the bank-in-pseudo-channel index (bank +
// banks_per_group x SID) is offset, modulo its radix, by the sum of the row's digits in that
// radix, so rows a power of two apart use different banks. bank_pc: bank, and the pseudo-channel
// and bank group index (pseudo-channel + pseudo_channels x bank group) is offset likewise by the
// digit sum of the bank, SID and row, so streams that start at aligned addresses are spread over
// the bank groups and pseudo-channels instead of moving through them in lockstep.
enum class AddressHash { none, bank, bank_pc };
constexpr auto enum_names(AddressHash) {
  return std::array{std::pair{AddressHash::none, std::string_view("none")},
                    std::pair{AddressHash::bank, std::string_view("bank")},
                    std::pair{AddressHash::bank_pc, std::string_view("bank_pc")}};
}

struct HbmParams {
  std::string type = "HBM3E";
  int stacks = 4;
  Bytes capacity_per_stack{};
  Bandwidth bandwidth{};  // per chip, all stacks; the pin rate is derived from it
  int bus_bits_per_stack = 1024;
  int channels = 16;
  int pseudo_channels = 2;
  int bank_groups = 4;
  int banks_per_group = 4;
  int sids = 1;
  Bytes row_bytes = Bytes(1024);
  Bytes burst_bytes = Bytes(32);
  Bytes interleave_bytes = Bytes(256);
  Duration controller_latency = Duration(40e-9);
  PagePolicy page_policy = PagePolicy::open;
  RefreshMode refresh_mode = RefreshMode::per_bank;
  AddressHash address_hash = AddressHash::bank_pc;
  HbmTiming timing{};
  HbmEnergy energy{};
  template <class V>
  void visit(V& v) {
    v.field("type", type, "memory technology (informational)");
    v.field("stacks", stacks, "HBM stacks per chip", InRange{1, 64});
    v.field("capacity_per_stack", capacity_per_stack, "capacity of one stack", Required{}, Positive{});
    v.field("bandwidth", bandwidth, "peak bandwidth of all stacks of the chip",
            Required{}, Positive{});
    v.field("bus_bits_per_stack", bus_bits_per_stack, "data pins per stack", InRange{1, 65536});
    v.field("channels", channels, "channels per stack", InRange{1, 1024});
    v.field("pseudo_channels", pseudo_channels, "pseudo-channels per channel", InRange{1, 64});
    v.field("bank_groups", bank_groups, "bank groups per pseudo-channel and SID", InRange{1, 64});
    v.field("banks_per_group", banks_per_group, "banks per bank group", InRange{1, 64});
    v.field("sids", sids, "stack IDs (ranks)", InRange{1, 64});
    v.field("row_bytes", row_bytes, "row (page) size per pseudo-channel", Positive{});
    v.field("burst_bytes", burst_bytes, "bytes per burst per pseudo-channel", Positive{});
    v.field("interleave_bytes", interleave_bytes,
            "address interleaving granularity across stacks and channels", Positive{});
    v.field("controller_latency", controller_latency,
            "controller, PHY and on-chip path latency added to each access", AtLeast{0});
    v.field("page_policy", page_policy, "row buffer policy");
    v.field("refresh_mode", refresh_mode,
            "all_bank (REFab per channel) or per_bank (REFsb per bank, as HBM3 controllers use)");
    v.field("address_hash", address_hash,
            "none, bank (bank and SID permuted by the row) or bank_pc (also pseudo-channel and "
            "bank group permuted by bank, SID and row)");
    v.field("timing", timing, "DRAM timing parameters", Required{});
    v.field("energy", energy, "DRAM energy parameters", Required{});
  }
};

struct ChipLinkParams {
  int lanes = 160;
  Bandwidth lane_rate{};  // per lane per direction
  Duration phy_latency{};
  EnergyPerBit energy{};
  double idle_fraction = 0.5;
  template <class V>
  void visit(V& v) {
    v.field("lanes", lanes, "SerDes lanes per chip", InRange{1, 65536});
    v.field("lane_rate", lane_rate, "data rate of one lane per direction", Required{},
            Positive{});
    v.field("phy_latency", phy_latency, "PHY, PCS and FEC latency per link end", Required{},
            AtLeast{0});
    v.field("energy", energy, "link energy per bit per direction", Required{});
    v.field("idle_fraction", idle_fraction, "idle link power as a fraction of full-rate power",
            InRange{0, 1});
  }
};

// Which registered implementation plays a role of the chip (trnsim list-types).
struct ModelChoice {
  std::string model;
  template <class V>
  void visit(V& v) {
    v.field("model", model, "registered implementation (trnsim list-types)");
  }
};

struct ChipParams {
  std::string name;
  std::string core_version;
  int cores = 8;
  int dies = 2;
  Power tdp{};
  Power static_power{};
  EnergyPerBit die_to_die_energy{};
  Bandwidth die_to_die_bandwidth{};
  Duration die_to_die_latency{};
  CoreParams core{};
  HbmParams hbm{};
  ChipLinkParams link{};
  ModelChoice memory{"hbm"};
  ModelChoice compute{};  // empty: chosen by /sim/fidelity
  ModelChoice power{"table"};
  template <class V>
  void visit(V& v) {
    v.field("name", name, "chip name", Required{});
    v.field("core_version", core_version, "NeuronCore version", Required{});
    v.field("cores", cores, "NeuronCores per chip", InRange{1, 256});
    v.field("dies", dies, "compute dies per chip", InRange{1, 64});
    v.field("tdp", tdp, "thermal design power", Required{});
    v.field("static_power", static_power, "leakage and uncore power of the whole chip",
            Required{});
    v.field("die_to_die_energy", die_to_die_energy, "energy per bit crossing between dies",
            Required{});
    v.field("die_to_die_bandwidth", die_to_die_bandwidth,
            "bandwidth per direction between the two dies", Required{}, Positive{});
    v.field("die_to_die_latency", die_to_die_latency, "latency of a die crossing", Required{},
            AtLeast{0});
    v.field("core", core, "one NeuronCore", Required{});
    v.field("hbm", hbm, "HBM stacks", Required{});
    v.field("link", link, "chip-to-chip link interface", Required{});
    v.field("memory", memory,
            "memory model: hbm (banks, timing, refresh) or bandwidth (per-stack bandwidth and a "
            "fixed latency); a rack replay uses /replay/chip_memory instead");
    v.field("compute", compute, "compute model: tile (engine programs of every tile) or op "
                                "(each distinct op simulated once on the tile model, then "
                                "replayed); empty: by /sim/fidelity");
    v.field("power", power,
            "power model: table (each counted action at its rated energy, each block's rated "
            "static power all the time; docs/architecture.md#statistics-and-energy)");
  }
};

}  // namespace trnsim::config
