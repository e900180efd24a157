// SPDX-License-Identifier: MIT
// Energy as counted actions and one power model: the blocks count quantities by typed action,
// every energy figure comes from the PowerModel it is collected with (one elaboration per TEST).
#include <gtest/gtest.h>

#include "common/power.hpp"
#include "neuron_core/neuron_core.hpp"
#include "test_support.hpp"

namespace trnsim::model {
namespace {

using test::chip_preset;
using test::FixedMemory;
using test::Runner;

TEST(Power, ActionNamesAreTheReportCategories) {
  EXPECT_EQ(action_name(Action::switch_), "switch");
  EXPECT_EQ(action_name(Action::hbm_refresh), "hbm_refresh");
  EXPECT_EQ(action_name(tensor_mac(DType::mxfp8)), "tensor_mac_mxfp8");
  EXPECT_EQ(action_name(tensor_mac(DType::fp32)), "tensor_mac_fp32");
  for (std::size_t i = 0; i < kActions; ++i) {
    const Action a = Action(i);
    EXPECT_EQ(action_named(action_name(a)), a) << action_name(a);
  }
  EXPECT_EQ(action_named("vector"), std::nullopt);
  EXPECT_EQ(action_unit(Action::hbm_activate), ActionUnit::activations);
  EXPECT_EQ(action_unit(Action::tensor_mac_bf16), ActionUnit::macs);
  EXPECT_EQ(action_unit(Action::gpsimd_elements), ActionUnit::elements);
  EXPECT_EQ(action_unit(Action::link), ActionUnit::bytes);
}

// A meter counts the quantity and the rated energy of each action as it comes.
TEST(Power, MeterCountsQuantityAndRatedEnergy) {
  ActionMeter m;
  m.per_unit_j = per_byte(EnergyPerBit(2e-12));  // 16 pJ per byte
  m.count(100);
  m.count(28);
  EXPECT_DOUBLE_EQ(m.quantity, 128);
  EXPECT_DOUBLE_EQ(m.rated_j, 128 * 16e-12);
  m.count_priced(2, 1e-9);  // what a calibration priced elsewhere
  EXPECT_DOUBLE_EQ(m.quantity, 130);
  EXPECT_DOUBLE_EQ(m.rated_j, 128 * 16e-12 + 1e-9);
}

// Prices every action at twice its rated energy and gives every block 3 W of static power.
class DoublePower final : public PowerModel {
 public:
  Energy dynamic(const Block&, Action, const ActionMeter& m) const override {
    return Energy(2 * m.rated_j);
  }
  Energy static_energy(const Block&, Duration elapsed) const override {
    return energy(Power(3.0), elapsed);
  }
};

// A 128x128x512 BF16 matmul on one core: the Tensor engine counts its MACs, SBUF and PSUM their
// bytes (test_neuron_core.cpp's MatmulCyclesAndEnergy has the energies), and what
// collect_energy() and dynamic_energy() report is what the power model they are given prices.
TEST(Power, BlocksCountActionsTheModelPricesThem) {
  auto p = chip_preset("trn2", {"chip.core.tensor.power_ramp.enabled=false"});
  FixedMemory mem(Duration(100e-9), Bandwidth(1e12));
  NeuronCore core("nc", p.core, mem);
  Runner r("r", [&] {
    Program prog;
    prog.done = prog.new_semaphore();
    Instr in;
    in.kind = Instr::Kind::matmul;
    in.k = 128;
    in.m = 128;
    in.n = 512;
    in.dtype = Dtype::bf16;
    in.new_stationary = true;
    prog.push(EngineId::tensor, in).signal(prog.done);
    prog.done_target = 1;
    core.run(prog);
  });
  sc_core::sc_start();
  const auto& tensor = core.tensor().meters();
  ASSERT_EQ(tensor.size(), 1u);
  EXPECT_DOUBLE_EQ(tensor.at(Action::tensor_mac_bf16).quantity, 128.0 * 128 * 512);
  EXPECT_DOUBLE_EQ(tensor.at(Action::tensor_mac_bf16).per_unit_j, 0.65e-12);
  const auto actions = collect_actions(&core);
  EXPECT_DOUBLE_EQ(actions.at(Action::sbuf_read).quantity, (128.0 * 128 + 128.0 * 512) * 2);
  EXPECT_DOUBLE_EQ(actions.at(Action::psum_write).quantity, 128.0 * 512 * 4);
  EXPECT_DOUBLE_EQ(actions.at(Action::psum_read).quantity, 0.0);  // a first matmul: no accumulate
  EXPECT_EQ(actions.count(Action::dma), 0u);        // idle blocks report no action

  const auto table = collect_energy(TablePower{}, Duration(1e-3), &core);
  const auto doubled = collect_energy(DoublePower{}, Duration(1e-3), &core);
  EXPECT_DOUBLE_EQ(table.by_category_joules.at("tensor_mac_bf16"), 128.0 * 128 * 512 * 0.65e-12);
  ASSERT_EQ(doubled.by_category_joules.size(), table.by_category_joules.size());
  for (const auto& [cat, j] : table.by_category_joules) {
    EXPECT_DOUBLE_EQ(doubled.by_category_joules.at(cat), 2 * j) << cat;
  }
  EXPECT_DOUBLE_EQ(doubled.dynamic.si, 2 * table.dynamic.si);
  EXPECT_DOUBLE_EQ(table.static_.si, 0.0);  // a core alone has no rated static power
  const auto blocks = blocks_under(&core);
  EXPECT_DOUBLE_EQ(doubled.static_.si, 3.0 * 1e-3 * double(blocks.size()));
  EXPECT_EQ(dynamic_energy(TablePower{}, blocks).si, table.dynamic.si);
  EXPECT_EQ(dynamic_energy(DoublePower{}, blocks).si, doubled.dynamic.si);
}

// A block whose meters run ahead of the work by a fixed 5 pJ (as the HBM model's reservations).
class Ahead final : public Block {
 public:
  using Block::Block;
  Energy dynamic_unmetered(const PowerModel&, const sc_core::sc_time&) const override {
    return Energy(-5e-12);
  }
  bool has_unmetered() const override { return true; }
};

// The run's power samples (MeterList) add what dynamic_energy_at() adds, in the same order, to
// the bit: the meters of every block, then the unmetered energy of those that have it; a meter
// created after the list was made (meters are made on first use) is listed from then on.
TEST(Power, MeterListSumsWhatDynamicEnergyAtSums) {
  Block a("a"), b("b");
  Ahead c("c");
  const std::vector<const Block*> blocks{&a, &b, &c};
  const sc_core::sc_time t(1, sc_core::SC_US);
  ActionMeter& link = a.meter(Action::link, 1e-12);
  link.count(3);  // 3 pJ
  MeterList list(blocks);
  EXPECT_DOUBLE_EQ(list.dynamic_at(TablePower{}, t).si, 3e-12 - 5e-12);
  EXPECT_EQ(list.dynamic_at(TablePower{}, t).si, dynamic_energy_at(TablePower{}, blocks, t).si);
  b.meter(Action::dma, 2e-12).count(7);  // 14 pJ, a meter the list has not seen
  link.count(1);                         // 1 pJ more on one it has
  EXPECT_DOUBLE_EQ(list.dynamic_at(TablePower{}, t).si, 4e-12 + 14e-12 - 5e-12);
  EXPECT_EQ(list.dynamic_at(TablePower{}, t).si, dynamic_energy_at(TablePower{}, blocks, t).si);
  EXPECT_EQ(list.dynamic_at(DoublePower{}, t).si, dynamic_energy_at(DoublePower{}, blocks, t).si);
  EXPECT_DOUBLE_EQ(list.dynamic_at(DoublePower{}, t).si, 2 * (4e-12 + 14e-12) - 5e-12);
}

}  // namespace
}  // namespace trnsim::model
