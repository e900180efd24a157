// SPDX-License-Identifier: MIT
// Energy as actions and a price. Blocks count what they do by a typed Action (bytes an HBM read
// moved, MACs a Tensor engine did, bytes a link carried, ...) in an ActionMeter; a PowerModel, the
// implementation of the registry's `power` role chosen by /chip/power/model, turns those meters
// and the time a block existed (and was busy) into dynamic and static energy. collect_energy()
// and dynamic_energy() (block.hpp) ask the model, so no report reads a block's energy any other
// way.
//
// The `table` model prices an action at the rated energy per unit its block was built with (the
// cited per-bit, per-MAC, per-activation figures of the presets) and static energy as the
// block's rated static power times the elapsed time: the figures trnsim has always reported. A
// meter keeps that rated sum as it counts (one multiply-add per action, as the per-category
// accumulators before it), so results keep their rounding to the bit and the run's power samples
// can read it during the run.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "trnsim/dtype.hpp"
#include "trnsim/units.hpp"

namespace trnsim::model {

class Block;

// What a block counts energy for. The order is the alphabetical order of the names: a block's
// meters are summed in this order, as the per-category map they replace summed them (results
// identical to the bit). The names are the categories the reports print.
enum class Action : std::uint8_t {
  chip_forwarding,   // bytes a chip's router forwarded for other chips
  die_to_die,        // bytes that crossed between a chip's dies
  dma,               // bytes a DMA engine moved
  gpsimd_elements,   // elements the GpSimd engine processed
  hbm_activate,      // row activations (ACT+PRE pairs)
  hbm_controller,    // bytes through the memory controller
  hbm_phy,           // bytes through the host PHY
  hbm_read,          // bytes read from DRAM (the bandwidth model: with PHY and controller)
  hbm_refresh,       // all-bank refreshes of one channel (a per-bank refresh counts its share)
  hbm_write,         // bytes written to DRAM (the bandwidth model: with PHY and controller)
  link,              // wire bytes a link direction carried
  psum_read,         // bytes read from PSUM
  psum_write,        // bytes written to PSUM
  sbuf_read,         // bytes read from SBUF
  sbuf_write,        // bytes written to SBUF
  scalar_elements,   // elements the Scalar engine processed
  switch_,           // bytes a switch passed through (printed "switch")
  tensor_mac_bf16,   // MACs of the Tensor engine, by data type
  tensor_mac_fp16,
  tensor_mac_fp32,
  tensor_mac_fp8,
  tensor_mac_mxfp4,
  tensor_mac_mxfp8,
  vector_elements,   // elements the Vector engine processed
};
inline constexpr std::size_t kActions = std::size_t(Action::vector_elements) + 1;

enum class ActionUnit { bytes, macs, elements, activations, refreshes };

// The category name reports print ("hbm_read", "switch", "tensor_mac_bf16").
std::string_view action_name(Action a);
// The action of a category name; none for a name that is not one.
std::optional<Action> action_named(std::string_view name);
ActionUnit action_unit(Action a);
std::string_view unit_symbol(ActionUnit u);
// The Tensor engine's MAC action for a data type.
Action tensor_mac(DType d);

// Rated energy per byte of a per-bit figure (exact: a power of two).
constexpr double per_byte(EnergyPerBit e) { return e.si * 8.0; }

// The count of one action of one block: its quantity in the action's unit and that quantity at
// the block's rated energy per unit, summed as it was counted.
struct ActionMeter {
  double quantity = 0;
  double rated_j = 0;
  double per_unit_j = 0;  // the rated energy per unit, from the block's parameters
  void count(double q) {
    quantity += q;
    rated_j += per_unit_j * q;
  }
  // A quantity whose rated energy was priced elsewhere: the op-level model replays what its
  // calibration counted and priced on the tile model.
  void count_priced(double q, double joules) {
    quantity += q;
    rated_j += joules;
  }
  bool operator==(const ActionMeter&) const = default;
};

// The one place that prices what blocks counted. Implementations are registry entries of the
// `power` role; docs/architecture.md#statistics-and-energy says what a calibrated one would do.
class PowerModel {
 public:
  virtual ~PowerModel() = default;
  // Dynamic energy of what `meter` counted of `action` in `block`.
  virtual Energy dynamic(const Block& block, Action action, const ActionMeter& meter) const = 0;
  // Static energy of `block` over `elapsed` (the run's end: every block exists for all of it).
  virtual Energy static_energy(const Block& block, Duration elapsed) const = 0;
};

// Today's constants: each action at its block's rated energy per unit, each block's rated static
// power (Block::static_power) all the time.
class TablePower final : public PowerModel {
 public:
  Energy dynamic(const Block& block, Action action, const ActionMeter& meter) const override;
  Energy static_energy(const Block& block, Duration elapsed) const override;
};

}  // namespace trnsim::model
