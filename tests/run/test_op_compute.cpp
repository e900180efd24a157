// SPDX-License-Identifier: MIT
// The op-level compute model against the tile model it is calibrated from: alone, an op takes
// exactly its tile-model time; two ops on one chip contend for HBM; the calibration does not
// depend on how many children run it or on the order of the ops.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "calibrate.hpp"
#include "profile_cache.hpp"
#include "chip/chip.hpp"
#include "chip/lowering.hpp"
#include "chip/op_chip.hpp"
#include "common/activity.hpp"
#include "test_support.hpp"
#include "trnsim/registry/registry.hpp"

namespace trnsim::run {
namespace {

using model::Dtype;
using model::ElementKind;
using model::ElementOp;
using model::GemmOp;

std::int64_t ps(double seconds) { return std::llround(seconds * 1e12); }

// A Trn3 chip as rack replays build it: the bandwidth memory.
resolve::ChipPlan trn3_plan() {
  resolve::ChipPlan plan = resolve::plan_chip(test::chip_preset("trn3"), 1);
  plan.memory_model = "bandwidth";
  plan.compute_model = "op";
  return plan;
}

registry::Registry& builtin() {
  static registry::Registry r = [] {
    registry::Registry x;
    registry::register_builtin_models(x);
    return x;
  }();
  return r;
}

std::shared_ptr<model::OpTable> table_of(const resolve::ChipPlan& plan,
                                         const std::vector<model::ComputeOp>& ops, int parallel) {
  auto t = std::make_shared<model::OpTable>();
  t->exact = calibrate_ops(plan, ops, parallel, &t->static_power_w);
  return t;
}

const std::vector<model::ComputeOp> kSmall = {
    GemmOp{512, 512, 512, Dtype::mxfp8, 1},
    GemmOp{256, 1024, 384, Dtype::bf16, 1},
    GemmOp{128, 128, 128, Dtype::bf16, 4},
    ElementOp{ElementKind::elementwise, 1u << 20, Dtype::bf16, 2},
    ElementOp{ElementKind::activation, 1u << 16, Dtype::bf16, 1},
    ElementOp{ElementKind::softmax, 4096 * 128, Dtype::bf16, 1},
};

// A profile's SBUF and PSUM footprint (what the op-level chip reserves while the op runs) is the
// largest of the programs the op was lowered to, taken from the lowering the calibration ran.
TEST(OpCalibration, ProfileCarriesTheFootprintOfItsLowering) {
  const resolve::ChipPlan plan = trn3_plan();
  const auto table = table_of(plan, kSmall, 1);
  for (const auto& op : kSmall) {
    SCOPED_TRACE(model::op_key(op));
    model::HbmAllocator hbm;
    std::uint64_t sbuf = 0;
    int psum = 0;
    for (const auto& step : model::lower(op, "op", plan.params, hbm, plan.granularity)) {
      for (const auto& prog : step.per_core) {
        if (!prog) continue;
        sbuf = std::max(sbuf, prog->sbuf_bytes_per_partition);
        psum = std::max(psum, prog->psum_banks);
      }
    }
    const model::OpProfile& p = table->exact.at(model::op_key(op));
    EXPECT_GT(sbuf, 0u);
    EXPECT_EQ(p.sbuf_bytes_per_partition, sbuf);
    EXPECT_EQ(p.psum_banks, psum);
    if (std::holds_alternative<GemmOp>(op)) {
      EXPECT_GT(p.psum_banks, 0);
    }
  }
}

// Each op alone on a fresh tile chip and on a fresh op-level chip: the same picosecond, the
// same work (2 m k n flops for a GEMM).
TEST(OpCompute, AloneAnOpTakesExactlyItsTileTime) {
  const resolve::ChipPlan plan = trn3_plan();
  const auto table = table_of(plan, kSmall, 2);
  ASSERT_EQ(table->exact.size(), kSmall.size());
  model::Simulation sim;
  resolve::ChipPlan tile_plan = plan;
  tile_plan.compute_model = "tile";
  std::vector<std::unique_ptr<model::ChipModel>> tiles, ops;
  std::vector<model::OpStats> tile_st(kSmall.size()), op_st(kSmall.size());
  std::vector<std::unique_ptr<test::Runner>> runners;
  for (std::size_t i = 0; i < kSmall.size(); ++i) {
    tiles.push_back(registry::make_tile_chip(builtin(), fmt::format("tile{}", i).c_str(), tile_plan));
    ops.push_back(registry::make_chip(builtin(), fmt::format("op{}", i).c_str(), plan, nullptr,
                                      nullptr, table));
    runners.push_back(std::make_unique<test::Runner>(fmt::format("run_tile{}", i).c_str(), [&, i] {
      tile_st[i] = tiles[i]->execute(kSmall[i], "op");
    }));
    runners.push_back(std::make_unique<test::Runner>(fmt::format("run_op{}", i).c_str(), [&, i] {
      op_st[i] = ops[i]->execute(kSmall[i], "op");
    }));
  }
  sc_core::sc_start();
  for (std::size_t i = 0; i < kSmall.size(); ++i) {
    SCOPED_TRACE(model::op_key(kSmall[i]));
    EXPECT_GT(tile_st[i].time_s, 0);
    EXPECT_EQ(ps(op_st[i].time_s), ps(tile_st[i].time_s));
    EXPECT_EQ(table->exact.at(model::op_key(kSmall[i])).time_ps, ps(tile_st[i].time_s));
    EXPECT_EQ(op_st[i].flops, tile_st[i].flops);
    EXPECT_EQ(op_st[i].hbm_bytes, tile_st[i].hbm_bytes);
    EXPECT_EQ(op_st[i].cores_used, tile_st[i].cores_used);
  }
  EXPECT_EQ(op_st[0].flops, 2.0 * 512 * 512 * 512);
  EXPECT_EQ(op_st[2].flops, 2.0 * 128 * 128 * 128 * 4);
}

// The head of an op (fast-forward inside an op): `share` of the dimension that repeats most,
// at least the minimum, rounded up to whole repetitions; the op itself when the head would be
// more than half of it.
TEST(OpCompute, OpHeads) {
  using model::AttentionOp;
  using model::op_head;
  const double s = 1.0 / 16;
  // 384 GEMMs on 8 cores: 24 (3 per core).
  EXPECT_EQ(std::get<GemmOp>(op_head(GemmOp{4096, 160, 2048, Dtype::bf16, 384}, s, 8)).batch, 24u);
  // An expert GEMM: m = 30,239 rows -> ceil(30239 / 16) = 1,890, raised to the 2,048 minimum.
  const auto eg = std::get<GemmOp>(op_head(GemmOp{30239, 7168, 4096, Dtype::mxfp8, 1}, s, 8));
  EXPECT_EQ(eg.m, 2048u);
  EXPECT_EQ(eg.k, 7168u);
  EXPECT_EQ(eg.n, 4096u);
  // The contraction when it is the largest side: 65,536 -> 4,096.
  EXPECT_EQ(std::get<GemmOp>(op_head(GemmOp{4096, 65536, 1024, Dtype::mxfp8, 1}, s, 8)).k, 4096u);
  // 100,000 rows -> 6,250, rounded up to 6,656 (13 x 512).
  EXPECT_EQ(std::get<GemmOp>(op_head(GemmOp{100000, 1024, 1024, Dtype::mxfp8, 1}, s, 8)).m, 6656u);
  // 4,096: the 2,048 head would be half of it, not less: simulated whole.
  EXPECT_EQ(model::op_key(op_head(GemmOp{4096, 4096, 4096, Dtype::mxfp8, 1}, s, 8)),
            model::op_key(GemmOp{4096, 4096, 4096, Dtype::mxfp8, 1}));
  // 29,360,128 elements -> 1,835,008, raised to 2^22.
  EXPECT_EQ(std::get<ElementOp>(op_head(ElementOp{ElementKind::norm, 29360128, Dtype::bf16, 1}, s, 8))
                .elements,
            4194304u);
  // 128 attention heads -> 8, one per core.
  EXPECT_EQ(std::get<AttentionOp>(op_head(AttentionOp{1, 128, 4096, 4096, 160, Dtype::bf16}, s, 8))
                .heads,
            8u);
  // A share of 1 keeps every op whole.
  EXPECT_EQ(std::get<GemmOp>(op_head(GemmOp{4096, 160, 2048, Dtype::bf16, 384}, 1.0, 8)).batch, 384u);
}

double stat(const model::Block& b, const std::string& name) {
  for (const auto& st : b.stats().all()) {
    if (st.name == name) return st.value;
  }
  ADD_FAILURE() << b.name() << " has no statistic " << name;
  return -1;
}

// With fast-forward inside ops, a tile chip simulates an op's head and times the rest from the
// profiles: alone, the op takes the full op's tile time (to rounding), with its FLOPs, bytes and
// energy, and the chip counts it as extrapolated.
TEST(OpCompute, AloneAHeadedOpTakesItsTileTime) {
  resolve::ChipPlan plan = trn3_plan();
  plan.compute_model = "tile";
  plan.op_head = 1.0 / 16;
  const std::vector<model::ComputeOp> full = {
      ElementOp{ElementKind::elementwise, 1u << 24, Dtype::bf16, 2},
      GemmOp{256, 512, 8192, Dtype::mxfp8, 1},
      GemmOp{128, 128, 128, Dtype::bf16, 32},
  };
  std::vector<model::ComputeOp> all = full;
  for (const auto& op : full) {
    const auto head = model::op_head(op, plan.op_head, plan.params.cores);
    ASSERT_NE(model::op_key(head), model::op_key(op));
    all.push_back(head);
  }
  const auto table = table_of(plan, all, 2);
  model::Simulation sim;
  std::vector<std::unique_ptr<model::ChipModel>> headed, whole;
  std::vector<model::OpStats> hs(full.size()), ws(full.size());
  std::vector<std::unique_ptr<test::Runner>> runners;
  for (std::size_t i = 0; i < full.size(); ++i) {
    headed.push_back(registry::make_chip(builtin(), fmt::format("headed{}", i).c_str(), plan,
                                         nullptr, nullptr, table));
    whole.push_back(registry::make_tile_chip(builtin(), fmt::format("whole{}", i).c_str(), plan));
    runners.push_back(std::make_unique<test::Runner>(fmt::format("run_h{}", i).c_str(), [&, i] {
      hs[i] = headed[i]->execute(full[i], "op");
    }));
    runners.push_back(std::make_unique<test::Runner>(fmt::format("run_w{}", i).c_str(), [&, i] {
      ws[i] = whole[i]->execute(full[i], "op");
    }));
  }
  sc_core::sc_start();
  for (std::size_t i = 0; i < full.size(); ++i) {
    SCOPED_TRACE(model::op_key(full[i]));
    EXPECT_NEAR(double(ps(hs[i].time_s)), double(ps(ws[i].time_s)), 2.0);
    EXPECT_EQ(hs[i].flops, ws[i].flops);
    EXPECT_EQ(hs[i].hbm_bytes, ws[i].hbm_bytes);
    EXPECT_EQ(hs[i].instructions, ws[i].instructions);
    EXPECT_EQ(stat(*headed[i], "ops_extrapolated"), 1.0);
    EXPECT_EQ(stat(*whole[i], "ops_extrapolated"), 0.0);
    const double eh = model::collect_energy(model::TablePower{}, Duration(0), headed[i].get()).dynamic.si;
    const double ew = model::collect_energy(model::TablePower{}, Duration(0), whole[i].get()).dynamic.si;
    EXPECT_GT(ew, 0);
    EXPECT_NEAR(eh / ew, 1.0, 0.01);
  }
}

// Two memory-bound element ops at once on one op-level chip: each ends later than alone, and
// together they take at least their HBM bytes over the HBM bandwidth.
TEST(OpCompute, ConcurrentOpsContendForHbm) {
  const resolve::ChipPlan plan = trn3_plan();
  const ElementOp a{ElementKind::elementwise, 1u << 24, Dtype::bf16, 2};  // 64 MiB in, 32 out
  const ElementOp b{ElementKind::elementwise, 3u << 22, Dtype::bf16, 2};
  const auto table = table_of(plan, {a, b}, 2);
  const auto& pa = table->exact.at(model::op_key(a));
  const auto& pb = table->exact.at(model::op_key(b));
  // The bytes the tile model moved through the memory port: 3 x 2 B per element.
  EXPECT_EQ(pa.read_bytes + pa.write_bytes, 6.0 * (1u << 24));
  model::Simulation sim;
  auto chip = registry::make_chip(builtin(), "chip", plan, nullptr, nullptr, table);
  model::OpStats sa, sb;
  test::Runner x("x", [&] { sa = chip->execute(a, "a"); });
  test::Runner y("y", [&] { sb = chip->execute(b, "b"); });
  sc_core::sc_start();
  EXPECT_GT(ps(sa.time_s), pa.time_ps);
  EXPECT_GT(ps(sb.time_s), pb.time_ps);
  const double bytes = pa.read_bytes + pa.write_bytes + pb.read_bytes + pb.write_bytes;
  const double floor_s = bytes / plan.params.hbm.bandwidth.si;
  EXPECT_GE(std::max(sa.end_s, sb.end_s), floor_s);
  // And alone each was above its own share of that floor: contention, not a slow op.
  EXPECT_LT(double(pa.time_ps) * 1e-12, floor_s);
}

// The op tier's DMA queues are FIFO per core, as the tile model's are (an op's loads go to the
// same queues whatever the op): a small op started 1 ns after a large copy, on cores the copy
// uses, ends no earlier than the copy's memory stream plus its own (each as long as it takes
// alone: slices x the probe of one slice, at most the op's time). A copy uses no compute engine,
// so nothing but the DMA queues holds the small op back that long. The same when the copy is
// fast-forwarded (its traffic is reserved on the queues as a simulated op's is).
TEST(OpCompute, ASmallOpQueuesBehindALargeOnesDmaStream) {
  const resolve::ChipPlan plan = trn3_plan();
  const model::MemcpyOp a{256u << 20};
  const ElementOp b{ElementKind::elementwise, 1u << 16, Dtype::bf16, 2};
  const auto table = table_of(plan, {a, b}, 2);
  const auto& pa = table->exact.at(model::op_key(a));
  const auto& pb = table->exact.at(model::op_key(b));
  ASSERT_GE(pa.cores_used, pb.cores_used);
  EXPECT_EQ(pa.engine_busy_s, (std::array<double, 4>{0, 0, 0, 0}));
  const auto stream = [](const model::OpProfile& p) {
    return std::min<std::int64_t>(
        p.time_ps, std::int64_t(model::kOpPieces) * model::op_slices(p) * p.memory_ps);
  };
  const std::int64_t after = stream(pa) + stream(pb);
  // Without the queues the small op would end within its time alone plus a slice's wait.
  ASSERT_GT(stream(pa), 4 * pb.time_ps);
  // One chip where the copy is simulated, one where it is fast-forwarded (one kernel run).
  model::Simulation sim;
  std::vector<std::unique_ptr<model::ChipModel>> chips;
  std::array<model::OpStats, 2> sa, sb;
  std::vector<std::unique_ptr<test::Runner>> runners;
  for (int f = 0; f < 2; ++f) {
    chips.push_back(registry::make_chip(builtin(), fmt::format("chip{}", f).c_str(), plan, nullptr,
                                        nullptr, table));
    runners.push_back(std::make_unique<test::Runner>(fmt::format("copy{}", f).c_str(), [&, f] {
      const sc_core::sc_time alone(double(pa.time_ps), sc_core::SC_PS);
      sa[std::size_t(f)] = f == 1 ? chips[1]->fast_forward(a, a, "a", alone)
                                  : chips[0]->execute(a, "a");
    }));
    runners.push_back(std::make_unique<test::Runner>(fmt::format("small{}", f).c_str(), [&, f] {
      sc_core::wait(1, sc_core::SC_NS);
      sb[std::size_t(f)] = chips[std::size_t(f)]->execute(b, "b");
    }));
  }
  sc_core::sc_start();
  for (std::size_t f = 0; f < 2; ++f) {
    SCOPED_TRACE(f == 1 ? "copy fast-forwarded" : "copy simulated");
    EXPECT_EQ(ps(sb[f].start_s), 1000);
    EXPECT_GE(ps(sb[f].end_s), after);
    EXPECT_GE(ps(sa[f].time_s), pa.time_ps);
  }
}

// Same profiles with one child (the six ops on one tile chip) or two (each op on a chip of its
// own: calibrate_ops's chunks), and whatever the order of the ops.
TEST(OpCompute, CalibrationIsIndependentOfParallelismAndOrder) {
  const resolve::ChipPlan plan = trn3_plan();
  std::vector<model::ComputeOp> reversed(kSmall.rbegin(), kSmall.rend());
  const auto one = table_of(plan, kSmall, 1);
  const auto two = table_of(plan, reversed, 2);
  ASSERT_EQ(one->exact.size(), two->exact.size());
  for (const auto& [key, p] : one->exact) {
    SCOPED_TRACE(key);
    const auto& q = two->exact.at(key);
    EXPECT_EQ(p.time_ps, q.time_ps);
    EXPECT_EQ(p.memory_ps, q.memory_ps);
    EXPECT_EQ(p.read_bytes, q.read_bytes);
    EXPECT_EQ(p.write_bytes, q.write_bytes);
    EXPECT_EQ(p.engine_busy_s, q.engine_busy_s);
    EXPECT_EQ(p.actions, q.actions);
  }
  EXPECT_EQ(one->static_power_w, two->static_power_w);
}

// An op's profile is counted from zero for that op alone (calibrate.cpp), so it is the same to
// the bit alone on its chip and after other ops on the same chip: what lets the op profile store
// (profile_cache.hpp) keep single ops. 17 ops in 8 chunks (by key order: op i with ops i - 8 and
// i - 16 before it) against each op alone on its chip (8 at a time, one op a chunk).
TEST(OpCalibration, ProfileDoesNotDependOnItsCompany) {
  const resolve::ChipPlan plan = trn3_plan();
  std::vector<model::ComputeOp> ops;
  for (std::uint64_t m : {128, 256, 384, 512}) {
    for (std::uint64_t k : {128, 256}) ops.push_back(GemmOp{m, k, 256, Dtype::bf16, 1});
  }
  for (std::uint64_t i = 1; i <= 9; ++i) {
    ops.push_back(ElementOp{i % 2 ? ElementKind::elementwise : ElementKind::activation,
                            i * (1u << 14), Dtype::bf16, 1});
  }
  ASSERT_EQ(ops.size(), 17u);
  const auto together = calibrate_ops(plan, ops, 2);
  ASSERT_EQ(together.size(), 17u);
  std::map<std::string, model::OpProfile> alone;
  for (std::size_t i = 0; i < ops.size(); i += kCalibrationChunks) {
    const std::vector<model::ComputeOp> eight(
        ops.begin() + std::ptrdiff_t(i), ops.begin() + std::ptrdiff_t(std::min(i + kCalibrationChunks, ops.size())));
    for (auto& [k, p] : calibrate_ops(plan, eight, 2)) alone.emplace(k, std::move(p));
  }
  ASSERT_EQ(alone.size(), 17u);
  std::size_t with_energy = 0;
  for (const auto& [key, p] : together) {
    SCOPED_TRACE(key);
    EXPECT_EQ(profile_to_json(p).dump(), profile_to_json(alone.at(key)).dump());
    with_energy += !p.actions.empty();
  }
  EXPECT_EQ(with_energy, 17u);  // every op counted energy: the comparison is not of empty maps
}

// A generated workload declares the op shapes it may emit (replay::WorkSource::calibration_ops())
// and the calibration takes them: the table holds each distinct compute shape once (not the
// collective), with the profiles a trace of the same ops gets.
TEST(OpCompute, ASourcesDeclaredOpsAreCalibratedAsATracesAre) {
  const resolve::ChipPlan plan = trn3_plan();
  auto op = [](trace::OpKind kind, std::uint64_t m, std::uint64_t k, std::uint64_t n) {
    trace::Op o;
    o.kind = kind;
    o.m = m, o.k = k, o.n = n;
    o.dtype = trace::DType::bf16;
    o.group = "world";
    o.bytes = 1024;
    return o;
  };
  const std::vector<trace::Op> ops = {op(trace::OpKind::gemm, 512, 512, 512),
                                      op(trace::OpKind::gemm, 256, 1024, 384),
                                      op(trace::OpKind::gemm, 512, 512, 512),
                                      op(trace::OpKind::all_reduce, 0, 0, 0)};
  struct Declared : replay::WorkSource {
    const std::vector<trace::Op>* ops = nullptr;
    std::map<std::string, std::vector<int>> g{{"world", {0}}};
    int num_ranks() const override { return 1; }
    const std::map<std::string, std::vector<int>>& groups() const override { return g; }
    void begin(replay::Emitter&) override {}  // emits during the run, not known here
    void calibration_ops(const replay::OpVisitor& visit) const override {
      for (const auto& o : *ops) visit(0, o);
    }
  } source;
  source.ops = &ops;
  const auto generated = calibrate_workload(plan, source, 2, false);
  EXPECT_EQ(generated->shapes_simulated, 2);
  ASSERT_EQ(generated->exact.size(), 2u);
  trace::Workload w;
  w.ranks.resize(1);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    w.ranks[0].ops.push_back(ops[i]);
    w.ranks[0].ops.back().id = i;
  }
  w.groups = source.g;
  const auto traced = calibrate_workload(plan, w, 2, false);
  const auto direct = table_of(plan, {GemmOp{512, 512, 512, Dtype::bf16, 1},
                                      GemmOp{256, 1024, 384, Dtype::bf16, 1}}, 2);
  ASSERT_EQ(traced->exact.size(), 2u);
  for (const auto& [key, p] : direct->exact) {
    SCOPED_TRACE(key);
    EXPECT_GT(p.time_ps, 0);
    EXPECT_EQ(generated->exact.at(key).time_ps, p.time_ps);
    EXPECT_EQ(traced->exact.at(key).time_ps, p.time_ps);
    EXPECT_EQ(generated->exact.at(key).actions, p.actions);
  }
}

TEST(OpCompute, GridSizesAndInterpolation) {
  EXPECT_EQ(grid_sizes(10), (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 10}));
  EXPECT_EQ(grid_sizes(11), (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 10, 12}));
  EXPECT_EQ(grid_sizes(2), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(grid_sizes(1), (std::vector<std::uint64_t>{1}));
  model::OpTable t;
  model::OpProfile lo, hi;
  lo.time_ps = 1000;
  lo.read_bytes = 100;
  lo.actions[model::Action::vector_elements] = {100, 1.0, 0};
  hi.time_ps = 2000;
  hi.read_bytes = 300;
  hi.actions[model::Action::vector_elements] = {300, 3.0, 0};
  hi.actions[model::Action::sbuf_read] = {64, 2.0, 0};
  const ElementOp op{ElementKind::elementwise, 0, Dtype::bf16, 2};
  t.grids[model::grid_key(op)] = {{4, lo}, {8, hi}};
  model::OpProfile scratch;
  ElementOp mid = op;
  mid.elements = 6;  // halfway
  const auto* p = model::find_profile(t, mid, scratch);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->time_ps, 1500);
  EXPECT_DOUBLE_EQ(p->read_bytes, 200);
  EXPECT_DOUBLE_EQ(p->actions.at(model::Action::vector_elements).rated_j, 2.0);
  EXPECT_DOUBLE_EQ(p->actions.at(model::Action::vector_elements).quantity, 200);
  EXPECT_DOUBLE_EQ(p->actions.at(model::Action::sbuf_read).rated_j, 1.0);
  EXPECT_DOUBLE_EQ(p->actions.at(model::Action::sbuf_read).quantity, 32);
  // Asked again, the remembered answer: the same profile, still said to be interpolated, though
  // the scratch has since been overwritten.
  bool interpolated = false;
  scratch = lo;
  EXPECT_EQ(model::find_profile(t, mid, scratch, &interpolated), p);
  EXPECT_TRUE(interpolated);
  EXPECT_EQ(p->time_ps, 1500);
  mid.elements = 12;  // beyond the grid: on the line through the last two points
  EXPECT_EQ(model::find_profile(t, mid, scratch)->time_ps, 3000);
  mid.elements = 8;
  EXPECT_EQ(model::find_profile(t, mid, scratch, &interpolated), &t.grids.begin()->second[1].second);
  EXPECT_FALSE(interpolated);
  mid.elements = 2;  // below the grid
  EXPECT_EQ(model::find_profile(t, mid, scratch), nullptr);
  EXPECT_EQ(model::find_profile(t, GemmOp{1, 1, 1, Dtype::bf16, 1}, scratch), nullptr);
  // A GEMM's grid is over its rows m, for one (k, n, batch, dtype). 160 rows take two tiles of
  // 128, so the time of 256 rows; bytes and energy are those of 160 (a quarter of the way).
  const GemmOp g{0, 64, 32, Dtype::fp8, 1};
  t.grids[model::grid_key(g)] = {{128, lo}, {256, hi}, {384, lo}};
  p = model::find_profile(t, GemmOp{160, 64, 32, Dtype::fp8, 1}, scratch);
  EXPECT_EQ(p->time_ps, 2000);
  EXPECT_DOUBLE_EQ(p->read_bytes, 150);
  EXPECT_DOUBLE_EQ(p->actions.at(model::Action::vector_elements).rated_j, 1.5);
  // 300 rows: three tiles, the time of 384; bytes of 300, 44/128 of the way from 256 to 384.
  p = model::find_profile(t, GemmOp{300, 64, 32, Dtype::fp8, 1}, scratch);
  EXPECT_EQ(p->time_ps, 1000);
  EXPECT_DOUBLE_EQ(p->read_bytes, 300 - 200 * 44.0 / 128);
  // Above the grid: on the line through the last point and the last at or below half its size,
  // 128 and 384 (both 1000 ps), not through 256 and 384, whose slope (-1000 ps per 128 rows)
  // would give 640 rows -1000 ps.
  EXPECT_EQ(model::find_profile(t, GemmOp{640, 64, 32, Dtype::fp8, 1}, scratch)->time_ps, 1000);
  EXPECT_EQ(model::find_profile(t, GemmOp{160, 64, 33, Dtype::fp8, 1}, scratch), nullptr);
  // A weight-gradient GEMM varies in k (tokens): its grid is over k for one (m, n).
  const GemmOp wg{64, 0, 32, Dtype::fp8, 1};
  t.grids[model::grid_key(wg, 1)] = {{1024, lo}, {2048, hi}};
  EXPECT_EQ(model::find_profile(t, GemmOp{64, 1536, 32, Dtype::fp8, 1}, scratch)->time_ps, 1500);
  EXPECT_EQ(model::grid_size(GemmOp{64, 1536, 32, Dtype::fp8, 1}, 1), 1536u);
  EXPECT_EQ(std::get<GemmOp>(model::with_grid_size(wg, 512, 2)).n, 512u);
}

TEST(OpCompute, GridPoints) {
  // Multiples of 128 on 1, 2, 3, 4, 5, 6, 7, 8, 10, ..., from the last at or below 300 (256)
  // to the first at or above 1000 (1024).
  EXPECT_EQ(grid_points(128, 300, 1000, 16384),
            (std::vector<std::uint64_t>{256, 384, 512, 640, 768, 896, 1024}));
  // Capped: sizes above 1000 are extrapolated from 1024 and the last point at or below 512,
  // which the grid already has.
  EXPECT_EQ(grid_points(128, 300, 50000, 1000),
            (std::vector<std::uint64_t>{256, 384, 512, 640, 768, 896, 1024}));
  // Every size above the cap: from half the top point.
  EXPECT_EQ(grid_points(128, 20000, 50000, 1000),
            (std::vector<std::uint64_t>{512, 640, 768, 896, 1024}));
  EXPECT_EQ(grid_points(1, 5, 5, 1 << 20), (std::vector<std::uint64_t>{4, 5}));
}

}  // namespace
}  // namespace trnsim::run
