// SPDX-License-Identifier: MIT
// The block registry: its entries document real config fields and statistics, the config picks
// the implementation, and a wrong name is an error that names the choices.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "chip/chip.hpp"
#include "common/network.hpp"
#include "common/histogram.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/error.hpp"
#include "trnsim/resolve/peaks.hpp"
#include "trnsim/resolve/resolve.hpp"

namespace trnsim::registry {
namespace {

Registry builtin() {
  Registry r;
  register_builtin_models(r);
  return r;
}

config::LoadedConfig preset(const std::string& file, const std::vector<std::string>& sets = {}) {
  return config::load_config(std::string(TRNSIM_SOURCE_DIR) + "/configs/" + file, sets);
}

TEST(Registry, EveryRoleHasItsBuiltins) {
  const Registry r = builtin();
  std::set<std::string> names;
  for (const auto& i : r.all()) names.insert(std::string(role_name(i.role)) + "/" + i.name);
  EXPECT_EQ(names, (std::set<std::string>{"memory/hbm", "memory/bandwidth", "network/packet",
                                          "network/flow", "compute/tile", "compute/op",
                                          "scale_out/flow", "power/table"}));
}

// What a run asks of an implementation comes from its entry, not from its name: the tile chip
// is what calibrations measure and can time op heads, the op chip needs a calibration, only the
// packet network has packets to probe and costs events per packet.
TEST(Registry, CapabilitiesSayWhatEachImplementationNeeds) {
  const Registry r = builtin();
  const auto& tile = r.get(Role::compute, "tile", "/chip/compute/model").capabilities;
  const auto& op = r.get(Role::compute, "op", "/chip/compute/model").capabilities;
  EXPECT_TRUE(tile.calibration_reference && tile.times_op_heads && tile.events_per_instruction);
  EXPECT_FALSE(tile.needs_calibration);
  EXPECT_TRUE(op.needs_calibration);
  EXPECT_FALSE(op.calibration_reference || op.times_op_heads || op.events_per_instruction);
  EXPECT_EQ(r.calibration_reference().name, "tile");
  const auto& packet = r.get(Role::network, "packet", "/rack/fabric/model");
  const auto& flow = r.get(Role::network, "flow", "/rack/fabric/model");
  EXPECT_TRUE(packet.capabilities.events_per_packet && packet.packet_probe);
  EXPECT_FALSE(flow.capabilities.events_per_packet || flow.packet_probe);
}

// The power model is a registry name like the other roles: `table` by default, and a name that
// is not registered fails in `trnsim config` as in every command, naming the choices.
TEST(Registry, PowerModelIsChosenInTheConfig) {
  const Registry r = builtin();
  const auto plan = *resolve::plan(preset("chips/trn2.json"), resolve::Purpose::bench_chip).chip;
  EXPECT_EQ(plan.power_model, "table");
  const auto power = make_power(r, plan);
  EXPECT_NE(dynamic_cast<const model::TablePower*>(power.get()), nullptr);
  const auto loaded = preset("racks/trn2-instance.json", {"chip.power.model=measured"});
  try {
    check(r, loaded);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--set chip.power.model:/chip/power/model"), std::string::npos) << m;
    EXPECT_NE(m.find("no power model named \"measured\"; expected one of \"table\""),
              std::string::npos) << m;
  }
  const auto bad = *resolve::plan(loaded, resolve::Purpose::bench_chip).chip;
  EXPECT_THROW(make_power(r, bad, &loaded.provenance), ConfigError);
}

// A registered parameter is a field of `trnsim schema` or a subtree of fields.
TEST(Registry, EveryRegisteredParameterIsInTheSchema) {
  const auto fields = config::schema_fields();
  const Registry r = builtin();
  for (const auto& i : r.all()) {
    ASSERT_FALSE(i.parameters.empty()) << i.name;
    for (const auto& p : i.parameters) {
      bool found = false;
      for (const auto& f : fields) {
        if (f.pointer == p || f.pointer.rfind(p + "/", 0) == 0) found = true;
      }
      EXPECT_TRUE(found) << i.name << ": " << p << " is not a config field";
    }
  }
}

TEST(Registry, UnknownModelNamesTheFileAndTheChoices) {
  const auto loaded = preset("racks/trn2-instance.json", {"chip.memory.model=dram"});
  try {
    check(builtin(), loaded);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--set chip.memory.model:/chip/memory/model"), std::string::npos) << m;
    EXPECT_NE(m.find("\"hbm\", \"bandwidth\""), std::string::npos) << m;
  }
}

TEST(Registry, DuplicateRegistrationIsAnInternalError) {
  Registry r = builtin();
  Implementation copy = r.all().front();
  EXPECT_THROW(r.add(copy), InternalError);
}

// The statistics the registry documents for `impl` are the ones its block registers: names,
// units and descriptions (the registry takes them from the block's keys; this catches a block
// that registers a statistic its key list lacks, or lists a key it never registers).
void expect_documented(const Implementation& impl, const model::Block& block) {
  std::set<std::string> declared, documented;
  for (const auto& s : block.stats().all()) {
    declared.insert(s.name + " " + std::string(model::unit_symbol(s.unit)) + " " + s.description);
  }
  for (const auto& s : impl.statistics) {
    documented.insert(s.name + " " + std::string(model::unit_symbol(s.unit)) + " " + s.description);
  }
  EXPECT_EQ(declared, documented) << impl.name;
  EXPECT_FALSE(documented.empty()) << impl.name;
}

// The memory model the plan names is the one the chip gets, and the statistics the registry
// documents are the ones the block declares.
void expect_memory(const std::string& model, const std::string& description) {
  const Registry r = builtin();
  const auto loaded = preset("chips/trn3.json", {"chip.memory.model=" + model});
  const auto plan = *resolve::plan(loaded, resolve::Purpose::bench_chip).chip;
  EXPECT_EQ(plan.memory_model, model);
  const auto chip = make_tile_chip(r, "chip", plan, &loaded.provenance);
  EXPECT_EQ(chip->memory_model(), description);
  const auto& impl = r.get(Role::memory, model, "/chip/memory/model");
  const auto* block = dynamic_cast<const model::Block*>(
      sc_core::sc_find_object("chip.hbm"));
  ASSERT_NE(block, nullptr);
  expect_documented(impl, *block);
  expect_documented(r.get(Role::compute, "tile", "/chip/compute/model"), *chip);
}

TEST(Registry, HbmMemoryIsBuiltWhenChosen) { expect_memory("hbm", "HbmSystem"); }

TEST(Registry, BandwidthMemoryIsBuiltWhenChosen) {
  expect_memory("bandwidth", "fallback: per-stack bandwidth + fixed latency (models/chip/memory.hpp)");
}

// Both networks document the statistics their top block registers.
TEST(Registry, NetworkStatisticsAreTheBlocks) {
  const Registry r = builtin();
  const auto loaded = preset("racks/trn2-instance.json");
  const auto rack = *resolve::plan(loaded, resolve::Purpose::run).rack;
  for (const std::string name : {"packet", "flow"}) {
    auto plan = rack.fabric;
    plan.model = name;
    const auto net = make_network(r, "net", rack.topology, plan);
    const auto* block = dynamic_cast<const model::Block*>(net.get());
    ASSERT_NE(block, nullptr) << name;
    expect_documented(r.get(Role::network, name, "/rack/fabric/model"), *block);
  }
}

// A statistic family is one key for every port: it matches its members and nothing else.
TEST(StatKey, FamilyMatchesItsMembersOnly) {
  constexpr model::StatKey wait{"port{}_wait_time", model::StatUnit::seconds, "waited at {}"};
  static_assert(wait.is_family());
  EXPECT_TRUE(wait.matches("port3_wait_time"));
  EXPECT_TRUE(wait.matches("port12_wait_time"));
  EXPECT_FALSE(wait.matches("port3_max_queue"));
  EXPECT_FALSE(wait.matches("credit_stall_time"));
  EXPECT_FALSE(wait.matches("port_wait_tim"));
  constexpr model::StatKey ops{"ops", model::StatUnit::count, "ops executed"};
  EXPECT_TRUE(ops.matches("ops"));
  EXPECT_FALSE(ops.matches("ops_extrapolated"));
  model::StatGroup g;
  const model::Stat& w = g.add(wait, "7");
  EXPECT_EQ(w.name, "port7_wait_time");
  EXPECT_EQ(w.description, "waited at 7");
  g.add(ops);
  EXPECT_EQ(g.find(ops), &g.all().back());
  EXPECT_THROW(g.add(wait), InternalError);  // a family needs its member
  EXPECT_THROW(g.add(ops, "1"), InternalError);
  EXPECT_THROW(g.find(wait), InternalError);
  // The same name in another unit is a key that does not describe this block.
  EXPECT_THROW(g.find(model::StatKey{"ops", model::StatUnit::seconds, ""}), InternalError);
  EXPECT_EQ(g.find(model::StatKey{"flops", model::StatUnit::count, ""}), nullptr);
}

// The chip benchmarks measure the tile model: asked for another, they say which key to change.
TEST(Registry, TileChipIsRefusedForTheOpModel) {
  const Registry r = builtin();
  const auto loaded = preset("chips/trn3.json", {"chip.compute.model=op"});
  const auto plan = *resolve::plan(loaded, resolve::Purpose::bench_chip).chip;
  try {
    make_tile_chip(r, "chip", plan, &loaded.provenance);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/chip/compute/model"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"op\""), std::string::npos) << e.what();
  }
}

TEST(Registry, ReplayChoosesTheMemoryWithTheKeyTheUserWrote) {
  const auto loaded = preset("racks/trn2-instance.json", {"replay.chip_memory=hbm"});
  EXPECT_EQ(resolve::plan(loaded, resolve::Purpose::run).rack->chip.memory_model, "hbm");
  EXPECT_EQ(resolve::plan(loaded, resolve::Purpose::bench_chip).chip->memory_model, "hbm");
  const auto dflt = preset("racks/trn2-instance.json");
  EXPECT_EQ(resolve::plan(dflt, resolve::Purpose::run).rack->chip.memory_model, "bandwidth");
  // The chip benchmarks build the chip as configured: the replay's memory model does not apply.
  EXPECT_EQ(resolve::plan(dflt, resolve::Purpose::bench_chip).chip->memory_model, "hbm");
}

// /replay/chip_memory is a registry name like the other roles: a name that is not registered is
// refused by `trnsim config` (registry::check) naming the key the user wrote and the choices.
TEST(Registry, ReplayMemoryIsARegistryName) {
  const auto loaded = preset("racks/trn2-instance.json", {"replay.chip_memory=dram"});
  try {
    check(builtin(), loaded);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--set replay.chip_memory:/replay/chip_memory: no memory model named \"dram\"; "
              "expected one of \"hbm\", \"bandwidth\"");
  }
}

// Overrides keep the pointer the user wrote: a rule failing on an overridden field names the
// override's key and file. (A fractional byte count is refused when the config is read, before
// any override, so the alias is exercised on the Where directly.)
TEST(Resolve, ReplayOverrideErrorNamesTheReplayKey) {
  const auto loaded = preset("racks/trn2-instance.json", {"replay.fabric_packet_bytes=128KiB"});
  resolve::Where at(&loaded.provenance);
  at.alias("/rack/fabric/packet_bytes", "/replay/fabric_packet_bytes");
  try {
    at.fail("/rack/fabric/packet_bytes", "expected something else");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--set replay.fabric_packet_bytes:/replay/fabric_packet_bytes: expected something "
              "else (applied as /rack/fabric/packet_bytes)");
  }
  EXPECT_THROW(preset("racks/trn2-instance.json", {"replay.fabric_packet_bytes=100.5B"}),
               ConfigError);
}

// A rule over several fields names the one the command line changed.
TEST(Resolve, HbmRuleNamesTheFieldTheUserSet) {
  const auto loaded = preset("chips/trn3.json", {"chip.hbm.pseudo_channels=3"});
  try {
    resolve::plan(loaded, resolve::Purpose::config);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--set chip.hbm.pseudo_channels:/chip/hbm/pseudo_channels:", 0),
              0u) << e.what();
  }
}

// Trn2 (8 cores of 128 x 128 PEs at 2.4 GHz; 1 BF16 and 2 FP8 MACs per PE per cycle, no MX
// types): BF16 8 x 128 x 128 x 2 x 1 x 2.4e9 = 629.1456 TFLOP/s, FP8 twice that; MXFP8 and MXFP4
// run as FP8, the first of mxfp8, fp8, bf16 the chip has. HBM 2.9 TB/s over 4 stacks.
TEST(Peaks, OfThePlansChipWithItsSubstitutions) {
  const auto loaded = preset("chips/trn2.json");
  const auto p = resolve::chip_peaks(*resolve::plan(loaded, resolve::Purpose::bench_chip).chip);
  EXPECT_DOUBLE_EQ(p.tensor(DType::bf16), 629.1456e12);
  EXPECT_DOUBLE_EQ(p.tensor(DType::fp8), 1258.2912e12);
  EXPECT_DOUBLE_EQ(p.tensor(DType::fp32), 629.1456e12 / 4);
  EXPECT_EQ(p.tensor(DType::mxfp8), 0.0);
  EXPECT_EQ(p.ran_as(DType::bf16), DType::bf16);
  EXPECT_EQ(p.ran_as(DType::mxfp8), DType::fp8);
  EXPECT_EQ(p.ran_as(DType::mxfp4), DType::fp8);
  EXPECT_DOUBLE_EQ(p.hbm_bytes_per_s, 2.9e12);
  EXPECT_DOUBLE_EQ(p.hbm_stack_bytes_per_s, 0.725e12);
  // Trn3 has MX types: they run as themselves.
  const auto trn3 = resolve::chip_peaks(*preset("chips/trn3.json").config.chip);
  EXPECT_EQ(trn3.ran_as(DType::mxfp8), DType::mxfp8);
  EXPECT_DOUBLE_EQ(trn3.tensor(DType::mxfp8), 4 * trn3.tensor(DType::bf16));
  // A chip with none of the substitutes has nothing to run an op it lacks as.
  config::DtypeRates fp32_only;
  fp32_only.fp32 = 1;
  EXPECT_EQ(resolve::tensor_dtype(fp32_only, DType::fp32), DType::fp32);
  EXPECT_EQ(resolve::tensor_dtype(fp32_only, DType::bf16), std::nullopt);
  fp32_only.bf16 = 1;
  EXPECT_EQ(resolve::tensor_dtype(fp32_only, DType::fp8), DType::bf16);
}

// What a ConfigError thrown by `f` says ("" when none is thrown).
template <class F>
std::string config_error(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("trnsim-resolve-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p.string();
}

// The placement rules are the plan's: `trnsim config` (Purpose::config) refuses what a run does.
TEST(Resolve, PlacementFileIsReadAndCheckedByThePlan) {
  using resolve::Purpose;
  auto with_file = [](const std::string& f) {
    return preset("racks/trn2-instance.json",
                  {"replay.placement=file", "replay.placement_file=" + f});
  };
  const auto bad_id = write_temp("bad-id.json", R"({"chips": [0, 16]})");
  EXPECT_EQ(config_error([&] { resolve::plan(with_file(bad_id), Purpose::config); }),
            bad_id + ":/chips/1: expected a chip id from 0 to 15, got 16");
  const auto negative = write_temp("negative.json", R"({"chips": [0, -1]})");
  EXPECT_EQ(config_error([&] { resolve::plan(with_file(negative), Purpose::config); }),
            negative + ":/chips/1: expected an integer >= 0, got -1");
  const auto typo = write_temp("typo.json", R"({"chips": [0, 1], "chip": 2})");
  EXPECT_EQ(config_error([&] { resolve::plan(with_file(typo), Purpose::run); }),
            typo + ":/chip: unknown key \"chip\"; did you mean \"chips\"?");
  EXPECT_EQ(config_error([&] {
              resolve::plan(preset("racks/trn2-instance.json", {"replay.placement=file"}),
                            Purpose::config);
            }),
            std::string(TRNSIM_SOURCE_DIR) + "/configs/racks/trn2-instance.json:"
            "/replay/placement_file: missing: placement \"file\" needs a placement file");
  // A good file places the ranks it names; fewer entries than ranks is refused when placing.
  const auto good = write_temp("good.json", R"({"chips": [3, 3, 7]})");
  const auto plan = resolve::plan(with_file(good), Purpose::run);
  EXPECT_EQ(resolve::place_ranks(plan.rack->placement, 2, 16), (std::vector<int>{3, 3}));
  EXPECT_EQ(config_error([&] { resolve::place_ranks(plan.rack->placement, 4, 16); }),
            good + ":/chips: places 3 ranks, the workload has 4");
  for (const auto& f : {bad_id, negative, typo, good}) std::filesystem::remove(f);
}

// LNC must divide the cores (placement logical_core); the rule names the key the user set.
TEST(Resolve, LogicalCorePlacementNeedsLncToDivideTheCores) {
  const auto loaded = preset("racks/trn2-instance.json",
                             {"replay.placement=logical_core", "chip.dies=1", "chip.cores=5"});
  EXPECT_EQ(config_error([&] { resolve::plan(loaded, resolve::Purpose::config); }),
            "--set chip.cores:/chip/cores: 2 does not divide the chip's 5 cores");
  const auto ok = preset("racks/trn2-instance.json", {"replay.placement=logical_core"});
  const auto plan = resolve::plan(ok, resolve::Purpose::run);
  EXPECT_EQ(plan.rack->placement.per_chip, 4);  // 8 cores at LNC=2
  EXPECT_EQ(resolve::place_ranks(plan.rack->placement, 6, 16), (std::vector<int>{0, 0, 0, 0, 1, 1}));
}

// A rack chip must have a type to run the dtypes it lacks as (it was refused only when an op
// needed it, deep in the run).
TEST(Resolve, RackChipNeedsAFallbackDtype) {
  const auto loaded = preset("racks/trn2-instance.json",
                             {"chip.core.tensor.macs_per_pe_cycle.bf16=0",
                              "chip.core.tensor.macs_per_pe_cycle.fp8=0",
                              "chip.core.tensor.macs_per_pe_cycle.mxfp8=0"});
  const std::string e = config_error([&] { resolve::plan(loaded, resolve::Purpose::config); });
  EXPECT_NE(e.find(":/chip/core/tensor/macs_per_pe_cycle: "), std::string::npos) << e;
  EXPECT_NE(e.find("supports none of mxfp8, fp8 and bf16"), std::string::npos) << e;
}

// The loader's rules are the plan's now: loading accepts, every purpose refuses.
TEST(Resolve, RulesOverTheRawConfigAreThePlans) {
  const auto loaded = preset("chips/trn2.json", {"chip.cores=7"});
  for (auto p : {resolve::Purpose::config, resolve::Purpose::bench_chip}) {
    EXPECT_EQ(config_error([&] { resolve::plan(loaded, p); }),
              "--set chip.cores:/chip/cores: expected a multiple of /chip/dies (2), got 7");
  }
}

// The workload's flow calibration replays its collectives on one rack; a cluster splits them
// across UltraServers, so the combination is refused with the key the user set.
TEST(Resolve, WorkloadFlowCalibrationIsForOneRack) {
  const auto loaded = preset("clusters/trn3-gen2-ultracluster-8.json",
                             {"rack.fabric.flow_calibration=workload"});
  const std::string e = config_error([&] { resolve::plan(loaded, resolve::Purpose::run); });
  EXPECT_EQ(e.find("--set rack.fabric.flow_calibration:/rack/fabric/flow_calibration: expected "
                   "none or packet with /cluster"),
            0u)
      << e;
  const auto ok = preset("clusters/trn3-gen2-ultracluster-8.json",
                         {"rack.fabric.flow_calibration=packet"});
  EXPECT_NO_THROW(resolve::plan(ok, resolve::Purpose::run));
}

// auto (the default): a run on one rack calibrates on its workload; a cluster's run and the
// collective benchmark (whose collective is the calibration's own case) do not calibrate.
TEST(Resolve, FlowCalibrationAutoIsTheWorkloadOfARunOnOneRack) {
  using FC = config::FlowCalibration;
  auto resolved = [](const char* file, resolve::Purpose p) {
    return resolve::plan(preset(file), p).rack->fabric.params.flow_calibration;
  };
  EXPECT_EQ(preset("racks/trn3-gen2-ultraserver.json").config.rack->fabric.flow_calibration,
            FC::auto_);
  EXPECT_EQ(resolved("racks/trn3-gen2-ultraserver.json", resolve::Purpose::run), FC::workload);
  EXPECT_EQ(resolved("racks/trn3-gen2-ultraserver.json", resolve::Purpose::bench_collective),
            FC::none);
  EXPECT_EQ(resolved("clusters/trn3-gen2-ultracluster-8.json", resolve::Purpose::run), FC::none);
}

TEST(Resolve, DmaQueueLimitIsCheckedBeforeTheModel) {
  const auto loaded = preset("chips/trn2.json", {"chip.core.dma.queues_per_engine=65"});
  EXPECT_THROW(resolve::plan(loaded, resolve::Purpose::config), ConfigError);
  const auto ok = preset("chips/trn2.json", {"chip.core.dma.queues_per_engine=64"});
  EXPECT_NO_THROW(resolve::plan(ok, resolve::Purpose::config));
}

}  // namespace
}  // namespace trnsim::registry

namespace trnsim::model {
namespace {

// Nearest-rank quantiles by hand: sorted 1 2 3 4 5; q = 0.5 -> rank ceil(2.5) = 3 -> 3.
TEST(Histogram, NearestRankQuantiles) {
  Histogram h({5, 1, 4, 2, 3});
  EXPECT_EQ(h.count(), 5u);
  EXPECT_DOUBLE_EQ(h.mean(), 3.0);
  EXPECT_DOUBLE_EQ(h.quantile(0), 1.0);
  EXPECT_DOUBLE_EQ(h.quantile(0.5), 3.0);
  EXPECT_DOUBLE_EQ(h.quantile(0.8), 4.0);   // rank 4
  EXPECT_DOUBLE_EQ(h.quantile(0.81), 5.0);  // rank ceil(4.05) = 5
  EXPECT_DOUBLE_EQ(h.max(), 5.0);
  h.add(0.5);  // the cache of sorted samples is refreshed
  EXPECT_DOUBLE_EQ(h.quantile(0), 0.5);
  EXPECT_DOUBLE_EQ(Histogram().quantile(0.5), 0.0);
}

}  // namespace
}  // namespace trnsim::model

namespace trnsim::registry {
namespace {

// /sim/fidelity fills the models the config leaves empty: a rack run is fast by default, a
// benchmark detailed; a model the config names wins over the fidelity.
TEST(Registry, FidelityChoosesTheModelsLeftEmpty) {
  using resolve::Purpose;
  auto rack = [](const config::LoadedConfig& l, Purpose p) { return *resolve::plan(l, p).rack; };
  const auto run = rack(preset("racks/trn2-instance.json"), Purpose::run);
  EXPECT_EQ(run.fabric.model, "flow");
  EXPECT_EQ(run.chip.compute_model, "op");
  EXPECT_EQ(run.fidelity, config::Fidelity::fast);
  const auto detailed =
      rack(preset("racks/trn2-instance.json", {"sim.fidelity=detailed"}), Purpose::run);
  EXPECT_EQ(detailed.fabric.model, "packet");
  EXPECT_EQ(detailed.chip.compute_model, "tile");
  const auto named = rack(
      preset("racks/trn2-instance.json", {"sim.fidelity=fast", "rack.fabric.model=packet"}),
      Purpose::run);
  EXPECT_EQ(named.fabric.model, "packet");
  // The benchmarks are detailed by default, the collective one through the whole rack too.
  const auto loaded = preset("racks/trn2-instance.json");
  EXPECT_EQ(resolve::plan(loaded, Purpose::bench_fabric).fabric->model, "packet");
  EXPECT_EQ(resolve::plan(loaded, Purpose::bench_chip).chip->compute_model, "tile");
  const auto collective = rack(loaded, Purpose::bench_collective);
  EXPECT_EQ(collective.fabric.model, "packet");
  EXPECT_EQ(collective.chip.compute_model, "tile");
  EXPECT_EQ(collective.fidelity, config::Fidelity::detailed);
  EXPECT_FALSE(collective.fast_forward);
  // `trnsim config` resolves the rack as a run does, the chip and fabric as the benchmarks do.
  const auto all = resolve::plan(loaded, Purpose::config);
  EXPECT_EQ(all.rack->fabric.model, "flow");
  EXPECT_EQ(all.fabric->model, "packet");
  EXPECT_EQ(all.chip->compute_model, "tile");
  EXPECT_THROW(preset("racks/trn2-instance.json", {"sim.fidelity=quick"}), ConfigError);
}

}  // namespace
}  // namespace trnsim::registry
