// SPDX-License-Identifier: MIT
// Flow-level network tests with hand-computed expected values: max-min fairness (two flows on a
// link, a parking-lot chain, a flow ending frees bandwidth at that instant), the fixed per-hop
// terms, conservation of bytes, and determinism; arbiter-fair sharing (per input, then per
// flow) on a star and the parking lot. Each TEST elaborates once (its own process).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../common/files.hpp"
#include "../common/run_trnsim.hpp"
#include "../common/topologies.hpp"
#include "common/activity.hpp"
#include "flow/flow_network.hpp"
#include "trnsim/error.hpp"
#include "trnsim/resolve/resolve.hpp"

int sc_main(int, char**) { return 1; }

namespace trnsim::model {
namespace {

using topo::ChipId;
using test::build;
using test::link;
using test::node;
using test::torus4x4;
using test::two_chips;

// The parking lot: switches s0 - s1 - s2 in a chain (150 ns each); chips a, b on s0, c on s1,
// d, e on s2. Every link 100 GB/s, 100 ns.
topo::Topology parking_lot() {
  topo::TopologySpec s;
  for (const char* c : {"a", "b", "c", "d", "e"}) s.nodes.push_back(node(c, topo::NodeKind::chip));
  for (const char* w : {"s0", "s1", "s2"}) {
    s.nodes.push_back(node(w, topo::NodeKind::switch_, 8, Duration(150e-9)));
  }
  s.links = {link("a", "s0", 100, 100), link("b", "s0", 100, 100), link("s0", "s1", 100, 100),
             link("c", "s1", 100, 100), link("s1", "s2", 100, 100), link("d", "s2", 100, 100),
             link("e", "s2", 100, 100)};
  return build(s);
}

config::FabricParams params(double packet = 4096) { return test::fabric_params(packet, "flow"); }

double ns(const sc_core::sc_time& t) { return t.to_seconds() * 1e9; }

// 1000 B + 16 B header = 4 flits = 1024 B on the wire; 1024 B / 100 GB/s = 10.24 ns: the same
// as the packet fabric's single packet.
TEST(FlowNetwork, OneMessageOverOneLink) {
  const auto topo = two_chips();
  FlowNetwork f("fabric", topo, resolve::plan_fabric(params(), topo));
  TransferHandle h;
  sc_core::sc_spawn([&] { h = f.start({ChipId{0}, ChipId{1}, 1000, 7, 0, 0}); });
  sc_core::sc_start();
  ASSERT_TRUE(h.done());
  const auto& r = h.record();
  EXPECT_NEAR(ns(r.completed), 500 + 10.24 + 100 + 500, 1e-3);
  EXPECT_EQ(r.packets, 1u);
  EXPECT_DOUBLE_EQ(r.last_packet.link.si * 1e9, 100);
  EXPECT_NEAR(r.last_packet.serialisation.si * 1e9, 10.24, 1e-3);
  EXPECT_NEAR(r.last_packet.queueing.si * 1e9, 0, 1e-3);
  EXPECT_EQ(r.last_packet.hops, 1);
}

// One-packet transfers on the lane (rack.fabric.flow_packets lane, the default): two messages of
// 1000 B (1,024 wire bytes, 10.24 ns at 100 GB/s) from chip 0 to chip 1 started together leave
// one after the other, as a link sends packets: the first ends as one alone,
// 500 + 10.24 + 100 + 500 = 1,110.24 ns, the second a packet time later, 1,120.48 ns. As fluid
// flows they share the link and both end at 500 + 2 x 10.24 + 100 + 500 = 1,120.48 ns.
void two_messages(config::FlowPackets mode, double first, double second) {
  const auto topo = two_chips();
  auto p = params();
  p.flow_packets = mode;
  FlowNetwork f("fabric", topo, resolve::plan_fabric(p, topo));
  TransferHandle a, b;
  sc_core::sc_spawn([&] {
    a = f.start({ChipId{0}, ChipId{1}, 1000, 1, 0, 0});
    b = f.start({ChipId{0}, ChipId{1}, 1000, 2, 0, 0});
  });
  sc_core::sc_start();
  ASSERT_TRUE(a.done() && b.done());
  EXPECT_NEAR(ns(a.record().completed), first, 1e-3);
  EXPECT_NEAR(ns(b.record().completed), second, 1e-3);
  EXPECT_NEAR(b.record().last_packet.serialisation.si * 1e9, 10.24, 1e-3);
  EXPECT_NEAR(b.record().last_packet.queueing.si * 1e9, 10.24, 1e-3);  // a packet time either way
}

TEST(FlowNetwork, OnePacketMessagesLeaveOneAfterTheOther) {
  two_messages(config::FlowPackets::lane, 1110.24, 1120.48);
}

TEST(FlowNetwork, OnePacketMessagesAsFluidFlowsShareTheLink) {
  two_messages(config::FlowPackets::fluid, 1120.48, 1120.48);
}

// Two requests started together from chip 0 to chip 1 of two_chips(): their rates 1 us later
// and their completion times.
struct Pair {
  double r1 = 0, r2 = 0, end1 = 0, end2 = 0;
};
Pair run_pair(FlowNetwork& f, const TransferRequest& a, const TransferRequest& b) {
  TransferHandle h1, h2;
  Pair p;
  sc_core::sc_spawn([&] {
    h1 = f.start(a);
    h2 = f.start(b);
    sc_core::wait(sc_core::sc_time(1000, sc_core::SC_NS));
    p.r1 = f.rate_of(h1);
    p.r2 = f.rate_of(h2);
  });
  sc_core::sc_start();
  EXPECT_TRUE(h1.done() && h2.done());
  p.end1 = ns(h1.record().completed);
  p.end2 = ns(h2.record().completed);
  return p;
}

// Two flows of 64 packets of 4096 B (64 x 17 flits x 256 B = 278,528 B on the wire each) share
// the link: 50 GB/s each, both drain after 5,570.56 ns.
TEST(FlowNetwork, TwoFlowsSharingALinkGetHalfEach) {
  const auto topo = two_chips();
  FlowNetwork f("fabric", topo, resolve::plan_fabric(params(), topo));
  const Pair p = run_pair(f, {ChipId{0}, ChipId{1}, 64 * 4096, 1, 0, 0},
                          {ChipId{0}, ChipId{1}, 64 * 4096, 2, 0, 0});
  // Payload rate: 50 GB/s x 4096 / 4352.
  EXPECT_NEAR(p.r1, 50e9 * 4096 / 4352, 1);
  EXPECT_NEAR(p.r2, 50e9 * 4096 / 4352, 1);
  EXPECT_NEAR(p.end1, 500 + 5570.56 + 100 + 500, 1e-3);
  EXPECT_NEAR(p.end2, 500 + 5570.56 + 100 + 500, 1e-3);
  EXPECT_EQ(f.max_flows(), 2u);
}

// A request of two pieces (128 packets) is one flow with the share of two: against a flow of
// one piece (64 packets) it gets 2/3 of the link and the other 1/3; each piece drains at the
// other's rate, so both end together: 278,528 wire bytes at 33.3 GB/s = 8,355.84 ns.
TEST(FlowNetwork, AFlowOfTwoPiecesTakesTwoShares) {
  const auto topo = two_chips();
  FlowNetwork f("fabric", topo, resolve::plan_fabric(params(), topo));
  TransferRequest two{ChipId{0}, ChipId{1}, 128 * 4096, 1, 0, 0};
  two.pieces = 2;
  const Pair p = run_pair(f, two, {ChipId{0}, ChipId{1}, 64 * 4096, 2, 0, 0});
  EXPECT_NEAR(p.r1, 100e9 * 2 / 3 * 4096 / 4352, 1);
  EXPECT_NEAR(p.r2, 100e9 / 3 * 4096 / 4352, 1);
  EXPECT_NEAR(p.end1, 500 + 8355.84 + 100 + 500, 1e-3);
  EXPECT_NEAR(p.end2, 500 + 8355.84 + 100 + 500, 1e-3);
  EXPECT_TRUE(f.merges_pieces());
}

// The pieces of a merged flow arrive one after another in its last round, as the packet
// fabric's transfers that share an output deliver them (packets in turn): 4 pieces of 4 packets
// of 4096 B (17 flits, 4,352 B on the wire each) alone on the link drain 69,632 wire bytes in
// 696.32 ns; piece k has arrived when 4 - k last packets remain, at 565.76, 609.28 and 652.80 ns
// (+ 500 ns overhead at each end + 100 ns link), the last with the completion at 696.32 ns.
// Without an on_pieces callback the flow posts no arrivals and ends at the same time.
TEST(FlowNetwork, PiecesOfAMergedFlowArriveInItsLastRound) {
  const auto topo = two_chips();
  FlowNetwork f("fabric", topo, resolve::plan_fabric(params(), topo));
  TransferRequest four{ChipId{0}, ChipId{1}, 16 * 4096, 1, 0, 0};
  four.pieces = 4;
  TransferHandle h, plain;
  std::vector<std::pair<std::uint32_t, double>> arrivals;
  sc_core::sc_spawn([&] {
    h = f.start(four);
    h.on_pieces([&](std::uint32_t n) { arrivals.emplace_back(n, ns(sc_core::sc_time_stamp())); });
    sc_core::wait(sc_core::sc_time(5000, sc_core::SC_NS));
    TransferRequest again = four;
    again.flow = 2;
    plain = f.start(again);
  });
  sc_core::sc_start();
  ASSERT_TRUE(h.done() && plain.done());
  ASSERT_EQ(arrivals.size(), 3u);
  const double at[] = {565.76, 609.28, 652.80};
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(arrivals[k].first, k + 1);
    EXPECT_NEAR(arrivals[k].second, 500 + at[k] + 100 + 500, 1e-3);
  }
  EXPECT_NEAR(ns(h.record().completed), 500 + 696.32 + 100 + 500, 1e-3);
  EXPECT_NEAR(ns(plain.record().completed) - 5000, 500 + 696.32 + 100 + 500, 1e-3);
}

// A flow of a pattern the calibration measured at efficiency 0.5 (FabricPlan::flow_efficiency)
// holds its share of the link for twice its wire bytes. Against an uncalibrated flow (pattern 0)
// both get 50 GB/s; the uncalibrated one drains its 278,528 wire bytes at 5,570.56 ns, by when
// the other has done half of its 557,056; the rest at the whole link: 2,785.28 ns more.
TEST(FlowNetwork, APatternsEfficiencyStretchesItsDrain) {
  const auto topo = two_chips();
  auto plan = resolve::plan_fabric(params(), topo);
  plan.flow_efficiency[3] = 0.5;
  FlowNetwork f("fabric", topo, plan);
  TransferRequest slow{ChipId{0}, ChipId{1}, 64 * 4096, 1, 0, 0};
  slow.pattern = 3;
  const Pair p = run_pair(f, slow, {ChipId{0}, ChipId{1}, 64 * 4096, 2, 0, 0});
  // Its payload moves at half its share: 25 GB/s x 4096 / 4352.
  EXPECT_NEAR(p.r1, 25e9 * 4096 / 4352, 1);
  EXPECT_NEAR(p.r2, 50e9 * 4096 / 4352, 1);
  EXPECT_NEAR(p.end1, 500 + 5570.56 + 2785.28 + 100 + 500, 1e-3);
  EXPECT_NEAR(p.end2, 500 + 5570.56 + 100 + 500, 1e-3);
}

// A flow of 32 packets (139,264 wire bytes) and one of 96 (417,792) start together. Both run at
// 50 GB/s until the short one drains at 2,785.28 ns; at that instant the long one takes the
// whole link for its remaining 278,528 B: 2,785.28 ns more.
TEST(FlowNetwork, AFlowEndingFreesBandwidthAtThatInstant) {
  const auto topo = two_chips();
  FlowNetwork f("fabric", topo, resolve::plan_fabric(params(), topo));
  TransferHandle shorter, longer;
  double after = 0;
  sc_core::sc_spawn([&] {
    shorter = f.start({ChipId{0}, ChipId{1}, 32 * 4096, 1, 0, 0});
    longer = f.start({ChipId{0}, ChipId{1}, 96 * 4096, 2, 0, 0});
    sc_core::wait(sc_core::sc_time(500 + 2785.28 + 1, sc_core::SC_NS));
    after = f.rate_of(longer);
  });
  sc_core::sc_start();
  ASSERT_TRUE(shorter.done() && longer.done());
  EXPECT_NEAR(ns(shorter.record().completed), 500 + 2785.28 + 100 + 500, 1e-3);
  EXPECT_NEAR(after, 100e9 * 4096 / 4352, 1);
  EXPECT_NEAR(ns(longer.record().completed), 500 + 2 * 2785.28 + 100 + 500, 1e-3);
}

// The parking lot's four flows (a -> d, two b -> c, c -> e) started together: their rates
// 1 µs in, and the handles of a -> d and c -> e once the run has ended.
struct ParkingLot {
  std::vector<double> rates;
  TransferHandle lng, ce;
};
ParkingLot run_parking_lot(const config::FabricParams& p) {
  const auto topo = parking_lot();
  FlowNetwork f("fabric", topo, resolve::plan_fabric(p, topo));
  auto id = [&](const char* n) { return *topo.node(*topo.find(n)).chip; };
  ParkingLot out;
  TransferHandle bc1, bc2;
  sc_core::sc_spawn([&] {
    const std::uint64_t big = 1000 * 4096;
    out.lng = f.start({id("a"), id("d"), big, 1, 0, 0});
    bc1 = f.start({id("b"), id("c"), big, 2, 0, 0});
    bc2 = f.start({id("b"), id("c"), big, 3, 0, 0});
    out.ce = f.start({id("c"), id("e"), big, 4, 0, 0});
    sc_core::wait(sc_core::sc_time(1000, sc_core::SC_NS));
    out.rates = {f.rate_of(out.lng), f.rate_of(bc1), f.rate_of(bc2), f.rate_of(out.ce)};
  });
  sc_core::sc_start();
  return out;
}

// Max-min on the parking lot: the long flow a -> d crosses s0->s1 (with two flows b -> c) and
// s1->s2 (with c -> e). s0->s1 is the bottleneck: a->d and both b->c get 100/3 GB/s; c -> e then
// takes what the long flow leaves on s1->s2: 200/3 GB/s.
TEST(FlowNetwork, ParkingLotIsMaxMinFair) {
  const ParkingLot run = run_parking_lot(params());
  const std::vector<double>& r = run.rates;
  ASSERT_EQ(r.size(), 4u);
  const double k = 1e9 * 4096 / 4352;
  EXPECT_NEAR(r[0], 100.0 / 3 * k, 1);
  EXPECT_NEAR(r[1], 100.0 / 3 * k, 1);
  EXPECT_NEAR(r[2], 100.0 / 3 * k, 1);
  EXPECT_NEAR(r[3], 200.0 / 3 * k, 1);
  const TransferHandle& lng = run.lng;
  ASSERT_TRUE(lng.done() && run.ce.done());
  // Fixed terms of a -> d: four links of 100 ns (a-s0, s0-s1, s1-s2, s2-d) and three switches
  // of 150 ns, on top of the endpoint overheads and the data.
  EXPECT_NEAR(lng.record().last_packet.link.si * 1e9, 400, 1e-9);
  EXPECT_NEAR(lng.record().last_packet.switching.si * 1e9, 450, 1e-9);
  EXPECT_EQ(lng.record().last_packet.hops, 4);
}

// Chips a, b, c on one switch s (150 ns); every link 100 GB/s, 100 ns.
topo::Topology star3() {
  topo::TopologySpec s;
  for (const char* c : {"a", "b", "c"}) s.nodes.push_back(node(c, topo::NodeKind::chip));
  s.nodes.push_back(node("s", topo::NodeKind::switch_, 8, Duration(150e-9)));
  s.links = {link("a", "s", 100, 100), link("b", "s", 100, 100), link("c", "s", 100, 100)};
  return build(s);
}

config::FabricParams arbiter_params() {
  auto p = params();
  p.flow_contention = config::FlowContention::arbiter;
  return p;
}

// Three flows a -> c and one b -> c, 64 packets each (278,528 wire bytes), started together on
// star3(): their rates 1 us later and their completions (ns).
struct ThreeAndOne {
  std::vector<double> rate, end;
};
ThreeAndOne three_and_one(const config::FabricParams& p) {
  const auto topo = star3();
  FlowNetwork f("fabric", topo, resolve::plan_fabric(p, topo));
  auto id = [&](const char* n) { return *topo.node(*topo.find(n)).chip; };
  std::vector<TransferHandle> h;
  ThreeAndOne r;
  sc_core::sc_spawn([&] {
    for (std::uint64_t k = 0; k < 3; ++k) h.push_back(f.start({id("a"), id("c"), 64 * 4096, k + 1, 0, 0}));
    h.push_back(f.start({id("b"), id("c"), 64 * 4096, 4, 0, 0}));
    sc_core::wait(sc_core::sc_time(1000, sc_core::SC_NS));
    for (const auto& t : h) r.rate.push_back(f.rate_of(t));
  });
  sc_core::sc_start();
  for (const auto& t : h) {
    EXPECT_TRUE(t.done());
    r.end.push_back(ns(t.record().completed));
  }
  return r;
}

// Fixed terms of a two-hop route on star3(): two links of 100 ns, one flit (2.56 ns) of
// cut-through, the switch's 150 ns, 500 ns at each end.
constexpr double kStarFixed = 500 + 200 + 2.56 + 150 + 500;

// Max-min: the four flows into c get a quarter of s -> c each and drain together after
// 278,528 B / 25 GB/s = 11,141.12 ns.
TEST(FlowNetwork, ThreeAndOneIntoOneOutputMaxMin) {
  const auto r = three_and_one(params());
  ASSERT_EQ(r.rate.size(), 4u);
  const double k = 1e9 * 4096 / 4352;
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(r.rate[std::size_t(i)], 25 * k, 1);
    EXPECT_NEAR(r.end[std::size_t(i)], kStarFixed + 11141.12, 1e-3);
  }
}

// Arbiter-fair: s -> c is shared round robin between its two inputs, a's link and b's: b's flow
// gets 50 GB/s, a's three 50/3 each (1/6, 1/6, 1/6, 1/2 of the link). b's drains at
// 278,528 B / 50 GB/s = 5,570.56 ns, when a's have sent a third; a's then share the link,
// 100/3 each, and drain their remaining two thirds in 5,570.56 ns more.
TEST(FlowNetwork, ThreeAndOneIntoOneOutputArbiter) {
  const auto r = three_and_one(arbiter_params());
  ASSERT_EQ(r.rate.size(), 4u);
  const double k = 1e9 * 4096 / 4352;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(r.rate[std::size_t(i)], 50.0 / 3 * k, 1);
    EXPECT_NEAR(r.end[std::size_t(i)], kStarFixed + 11141.12, 1e-3);
  }
  EXPECT_NEAR(r.rate[3], 50 * k, 1);
  EXPECT_NEAR(r.end[3], kStarFixed + 5570.56, 1e-3);
}

// Within one input the share goes by pieces, as at a chip's own link: a's three flows as one
// flow of three pieces (192 packets) still get half of s -> c, and b's flow the other half.
TEST(FlowNetwork, ArbiterSharesAnInputByPieces) {
  const auto topo = star3();
  FlowNetwork f("fabric", topo, resolve::plan_fabric(arbiter_params(), topo));
  auto id = [&](const char* n) { return *topo.node(*topo.find(n)).chip; };
  TransferRequest three{id("a"), id("c"), 3 * 64 * 4096, 1, 0, 0};
  three.pieces = 3;
  TransferHandle h3, h1;
  double r3 = 0, r1 = 0;
  sc_core::sc_spawn([&] {
    h3 = f.start(three);
    h1 = f.start({id("b"), id("c"), 64 * 4096, 2, 0, 0});
    sc_core::wait(sc_core::sc_time(1000, sc_core::SC_NS));
    r3 = f.rate_of(h3);
    r1 = f.rate_of(h1);
  });
  sc_core::sc_start();
  const double k = 1e9 * 4096 / 4352;
  EXPECT_NEAR(r3, 50 * k, 1);
  EXPECT_NEAR(r1, 50 * k, 1);
  // Then the three pieces alone: 557,056 B left at 100 GB/s.
  EXPECT_NEAR(ns(h3.record().completed), kStarFixed + 5570.56 + 5570.56, 1e-3);
}

// Arbiter-fair on the parking lot of ParkingLotIsMaxMinFair: s0 -> s1 gives its inputs a's link
// and b's link half each, so a -> d gets 50 GB/s and the two b -> c 25 each; s1 -> s2 gives
// s0's input (a -> d) and c's (c -> e) half each: c -> e 50 (max-min: 100/3, 100/3, 100/3, 200/3).
TEST(FlowNetwork, ParkingLotIsArbiterFair) {
  const ParkingLot run = run_parking_lot(arbiter_params());
  const std::vector<double>& r = run.rates;
  ASSERT_EQ(r.size(), 4u);
  const double k = 1e9 * 4096 / 4352;
  EXPECT_NEAR(r[0], 50 * k, 1);
  EXPECT_NEAR(r[1], 25 * k, 1);
  EXPECT_NEAR(r[2], 25 * k, 1);
  EXPECT_NEAR(r[3], 50 * k, 1);
}

// 400 transfers between random chips of a torus at random times: every byte is delivered once,
// the totals agree with the requests, and every link direction carried exactly the wire bytes
// of the flows that crossed it.
void conserves_bytes(config::FlowContention contention) {
  const auto topo = torus4x4();
  auto p = params(16384);
  p.flow_contention = contention;
  const auto plan = resolve::plan_fabric(p, topo);
  FlowNetwork f("fabric", topo, plan);
  std::vector<TransferHandle> hs;
  std::uint64_t requested = 0;
  double wire_hops = 0;
  sc_core::sc_spawn([&] {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 400; ++i) {
      const auto src = std::uint32_t(rng() % 16);
      auto dst = std::uint32_t(rng() % 16);
      if (dst == src) dst = (dst + 1) % 16;
      const std::uint64_t bytes = rng() % (1 << 20);
      requested += bytes;
      hs.push_back(f.start({ChipId{src}, ChipId{dst}, bytes, std::uint64_t(i), 0, 0}));
      const std::uint64_t full = bytes / 16384, rest = bytes % 16384;
      const double wire = double(full) * 65 * 256 +
                          (rest > 0 || full == 0 ? double((rest + 16 + 255) / 256 * 256) : 0);
      wire_hops += wire * double(topo.path(ChipId{src}, ChipId{dst}, std::uint64_t(i)).size());
      sc_core::wait(sc_core::sc_time(double(rng() % 2000), sc_core::SC_NS));
    }
  });
  sc_core::sc_start();
  for (const auto& h : hs) ASSERT_TRUE(h.done());
  const auto t = f.totals();
  EXPECT_EQ(t.transfers_started, 400u);
  EXPECT_EQ(t.transfers_completed, 400u);
  EXPECT_EQ(t.bytes_requested, requested);
  EXPECT_EQ(t.bytes_delivered, requested);
  EXPECT_NEAR(t.wire_bytes, wire_hops, 1e-6 * wire_hops);
  double per_dir = 0;
  for (const auto& s : collect_stats(Duration(1.0))) {
    for (const auto& st : s.stats) {
      if (st.name == "wire_bytes") per_dir += st.value;
    }
  }
  EXPECT_NEAR(per_dir, wire_hops, 1e-6 * wire_hops);
}

TEST(FlowNetwork, ConservesBytes) { conserves_bytes(config::FlowContention::max_min); }
TEST(FlowNetwork, ConservesBytesArbiter) { conserves_bytes(config::FlowContention::arbiter); }

TEST(FlowNetwork, RejectsASendToItself) {
  const auto topo = two_chips();
  FlowNetwork f("fabric", topo, resolve::plan_fabric(params(), topo));
  EXPECT_THROW(f.start({ChipId{1}, ChipId{1}, 10, 0, 0, 0}), InputError);
  EXPECT_THROW(f.start({ChipId{0}, ChipId{2}, 10, 0, 0, 0}), InputError);
}

// A drain past the network's last tick (2^62 ps = 4.61 x 10^6 s, 53 days): 10^13 B over a link
// of 1 kB/s would take 1.0625 x 10^10 s (a 4,096 B packet and its 16 B header are 17 flits of
// 256 B on the wire, 4,352 B: x 1.0625), and has 1.0625 x 10^13 - 4.61 x 10^9 = 1.062 x 10^13 B
// left then. Its drain used to be scheduled at a time whose bits overflowed the table of replaced
// event times (a crash); it is now a WorkloadError (exit 2) naming the transfer and what is
// left of it, which stops the simulation and is rethrown typed once sc_start() returns (SystemC
// would report it untyped). A flow held to a recomputation's floor rate, whose drain a later
// recomputation moves, is scheduled at the last tick too, and never reaches it (the default
// step with flow_contention arbiter crashed so).
// A transfer of `bytes` over one link of `gbps` that ends past the last tick: no completion, and
// the error (rethrown typed) holds `message`.
void refused_past_the_last_tick(double gbps, std::uint64_t bytes, const std::string& message) {
  topo::TopologySpec s;
  s.nodes = {node("a", topo::NodeKind::chip), node("b", topo::NodeKind::chip)};
  s.links = {link("a", "b", gbps, 100)};
  const auto topo = build(s);
  FlowNetwork f("fabric", topo, resolve::plan_fabric(params(), topo));
  bool done = false;
  sc_core::sc_spawn([&] {
    f.start({ChipId{0}, ChipId{1}, bytes, 1, 0, 0}, [&](const TransferRecord&) { done = true; });
  });
  sc_core::sc_start();
  EXPECT_FALSE(done);
  EXPECT_LE(sc_core::sc_time_stamp().value(), std::uint64_t(1) << 62);
  try {
    f.rethrow_error();
    ADD_FAILURE() << "no error";
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(FlowNetwork, RefusesATransferPastTheLastTick) {
  refused_past_the_last_tick(1e-6, 10'000'000'000'000ULL,
                             "from chip 0 to chip 1 has 1.06e+13 B left on the wire at 4.61e+06 s");
  EXPECT_EQ(sc_core::sc_time_stamp().value(), std::uint64_t(1) << 62);
}

// The same on the packet lane: one packet of 4,096 B (4,352 wire bytes) over a link of
// 1e-13 GB/s would take 4.35e7 s, past the 2^62 ticks (4.61e6 s at 1 ps) the network simulates:
// an error naming the transfer, not a wrapped time.
TEST(FlowNetwork, RefusesAPacketPastTheLastTick) {
  refused_past_the_last_tick(1e-13, 4096,
                             "the packet of 4096 B from chip 0 to chip 1 would leave hop 1 of its "
                             "route past 4.61e+06 s");
}

// A run ends at its last event, not at the limit (as sc_start() does): a thread that waits
// 7 ns leaves the time at 7 ns.
TEST(SimulatedTime, ARunEndsAtItsLastEvent) {
  sc_core::sc_spawn([] { sc_core::wait(7, sc_core::SC_NS); });
  model::run_bounded();
  EXPECT_EQ(sc_core::sc_time_stamp().value(), 7000u);
}

// A thread that waits 2^62 + 5 ticks, then 2^62, would end at 2^63 + 5 ticks, past the limit of
// 2^63 (9.22 x 10^6 s at 1 ps): the run stops with the second wait pending, an error (exit 2),
// and the time stays at the last event before the limit. Before the bound, the packet fabric's
// run of a 10^12 B all-reduce over 20 kB/s links wrapped the kernel's time ("TimedQueue: an item
// scheduled in the past", an internal error).
TEST(SimulatedTime, ARunStopsAtTheLimitWithWorkPending) {
  constexpr std::uint64_t k62 = std::uint64_t(1) << 62;
  bool ended = false;
  sc_core::sc_spawn([&] {
    sc_core::wait(sc_core::sc_time::from_value(k62 + 5));
    sc_core::wait(sc_core::sc_time::from_value(k62));
    ended = true;
  });
  try {
    model::run_bounded();
    ADD_FAILURE() << "no error";
  } catch (const WorkloadError& e) {
    EXPECT_NE(std::string(e.what()).find("has work pending past 9.22e+06 s of simulated time "
                                         "(2^63 ticks), the most a run simulates: its next event "
                                         "is at 9.22e+06 s"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(ended);
  EXPECT_EQ(sc_core::sc_time_stamp().value(), k62 + 5);
}

// The same run twice gives byte-identical summaries; the packet network gives a different step.
// Two runs of the same command line, each into a fresh folder of this process's own (suites run
// at once in other build trees share the temp folder).
struct TwoRuns {
  std::filesystem::path a, b;
  test::CliResult ra, rb;
};

TwoRuns run_twice(const std::string& args, const std::string& name) {
  TwoRuns t{test::fresh_dir("flow", name + "-a"), test::fresh_dir("flow", name + "-b"), {}, {}};
  t.ra = test::run_trnsim(args + " --out " + t.a.string(), false);
  t.rb = test::run_trnsim(args + " --out " + t.b.string(), false);
  return t;
}

TEST(FlowNetwork, RunsAreDeterministic) {
  const std::string base = std::string("run --config ") + TRNSIM_SOURCE_DIR +
                           "/configs/racks/trn2-instance.json --trace " + TRNSIM_SOURCE_DIR +
                           "/tests/golden/inputs/golden-moe-16.json --set sim.fidelity=fast";
  const auto t = run_twice(base, "det");
  ASSERT_EQ(t.ra.code, 0) << t.ra.out;
  ASSERT_EQ(t.rb.code, 0) << t.rb.out;
  const std::string sa = test::read_text(t.a / "ops.csv"), sb = test::read_text(t.b / "ops.csv");
  EXPECT_FALSE(sa.empty());
  EXPECT_EQ(sa, sb);
  EXPECT_NE(t.ra.out.find("network flow"), std::string::npos) << t.ra.out;
  std::filesystem::remove_all(t.a);
  std::filesystem::remove_all(t.b);
}

// A calibrated run twice with one cache: both succeed and give the same calibration (the
// report's identity.models.network.flow_calibration, returned) and step; the first simulated
// it, the second read it from the cache. Every case's flow time is its fixed part plus its data
// part (which doubles at half efficiency), and its efficiency is within [0.05, 1].
nlohmann::json calibrated_twice(const std::string& args, const std::string& name) {
  const auto t = run_twice(args, name);
  EXPECT_EQ(t.ra.code, 0) << t.ra.out;
  EXPECT_EQ(t.rb.code, 0) << t.rb.out;
  auto read = [](const std::filesystem::path& p) {
    return nlohmann::json::parse(test::read_text(p));
  };
  const auto ra = read(t.a / "report.json"), rb = read(t.b / "report.json");
  const auto cal = ra["identity"]["models"]["network"]["flow_calibration"];
  EXPECT_TRUE(cal.is_object()) << ra["identity"].dump();
  EXPECT_EQ(cal, rb["identity"]["models"]["network"]["flow_calibration"]);
  for (const auto& c : cal["cases"]) {
    EXPECT_GT(c["packet_ns"].get<double>(), 0) << c.dump();
    EXPECT_NEAR(c["flow_ns"].get<double>(),
                c["fixed_ns"].get<double>() + c["data_ns"].get<double>(), 1e-6);
    EXPECT_GE(c["efficiency"].get<double>(), 0.05);
    EXPECT_LE(c["efficiency"].get<double>(), 1);
  }
  EXPECT_EQ(ra["performance"]["step_time_ns"], rb["performance"]["step_time_ns"]);
  EXPECT_EQ(read(t.a / "host.json")["flow_calibration"]["from"], "simulated");
  EXPECT_EQ(read(t.b / "host.json")["flow_calibration"]["from"], "cache");
  std::filesystem::remove_all(t.a);
  std::filesystem::remove_all(t.b);
  return cal;
}

// rack.fabric.flow_calibration packet: the flow network's efficiency per pattern measured on
// the packet fabric of the rack before the run, recorded in report.json with every case's inputs
// and outputs; the same whether simulated or read back from the cache (host.json says which).
TEST(FlowCalibration, IsDeterministicAndInTheReport) {
  const auto cache = test::fresh_dir("flow", "cal-cache");
  ::setenv("TRNSIM_CACHE_DIR", cache.c_str(), 1);
  ::unsetenv("TRNSIM_NO_CACHE");
  const std::string base = std::string("run --config ") + TRNSIM_SOURCE_DIR +
                           "/configs/racks/trn2-instance.json --trace " + TRNSIM_SOURCE_DIR +
                           "/tests/golden/inputs/golden-moe-16.json --set sim.fidelity=fast "
                           "--set rack.fabric.flow_calibration=packet";
  const auto cal = calibrated_twice(base, "cal");
  EXPECT_EQ(cal["method"], "packet");
  EXPECT_EQ(cal["cases"].size(), 14u);
  // A value it does not know is refused with the key the user wrote.
  const auto bad = test::run_trnsim(base + " --set rack.fabric.flow_calibration=tiles");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("flow_calibration"), std::string::npos) << bad.out;
  std::filesystem::remove_all(cache);
}

// rack.fabric.flow_calibration workload: the cases are the workload's own collectives. 8 ranks
// on the Trn2 instance, two groups of 4 (ep0, ep1) and the world; each rank runs three
// all_to_all_v on its group (1, 2 and 0.5 MiB to each of 4 members: 4, 8 and 2 MiB) and one
// 2 MiB all-reduce on the world. Two classes: the all-to-alls (24 instances, 8 x 14 MiB =
// 117,440,512 B, median 4 MiB: the first visited of that size is rank 0's on ep0) before the
// all-reduce (8 instances, 16,777,216 B; 2 MiB is above mesh_max_bytes and below
// rdh_max_bytes on a power-of-two group: `auto` runs it by recursive halving-doubling,
// pattern 12).
TEST(FlowCalibration, WorkloadCasesAreItsOwnCollectives) {
  const auto dir = test::fresh_dir("flow", "cal-workload");
  ::setenv("TRNSIM_CACHE_DIR", (dir / "cache").c_str(), 1);
  ::unsetenv("TRNSIM_NO_CACHE");
  nlohmann::json w = {{"format", "trnsim-trace"}, {"version", 1}, {"name", "two-groups"},
                      {"ranks", 8}};
  w["groups"] = {{"world", {0, 1, 2, 3, 4, 5, 6, 7}}, {"ep0", {0, 1, 2, 3}}, {"ep1", {4, 5, 6, 7}}};
  constexpr std::uint64_t MiB = 1 << 20;
  for (int r = 0; r < 8; ++r) {
    nlohmann::json ops = nlohmann::json::array();
    const std::string ep = r < 4 ? "ep0" : "ep1";
    const std::uint64_t per_peer[] = {MiB, 2 * MiB, MiB / 2};
    for (int i = 0; i < 3; ++i) {
      nlohmann::json op = {{"id", i}, {"name", fmt::format("a2a{}", i)}, {"op", "all_to_all_v"},
                           {"group", ep}, {"send_bytes", std::vector<std::uint64_t>(4, per_peer[i])}};
      if (i > 0) op["deps"] = {i - 1};
      ops.push_back(op);
    }
    ops.push_back({{"id", 3}, {"name", "ar"}, {"op", "all_reduce"}, {"group", "world"},
                   {"bytes", 2 * MiB}, {"dtype", "bf16"}, {"deps", {2}}});
    w["rank_ops"].push_back({{"rank", r}, {"ops", ops}});
  }
  {
    std::ofstream f(dir / "trace.json");
    f << w.dump();
  }
  const std::string base = std::string("run --config ") + TRNSIM_SOURCE_DIR +
                           "/configs/racks/trn2-instance.json --trace " +
                           (dir / "trace.json").string() +
                           " --set sim.fidelity=fast --set rack.fabric.flow_calibration=workload";
  const auto cal = calibrated_twice(base, "cal-workload");
  EXPECT_EQ(cal["method"], "workload");
  ASSERT_EQ(cal["cases"].size(), 2u) << cal.dump();
  struct Want {
    const char *op, *ran;
    int pattern, ranks;
    std::uint64_t bytes;
    const char* group;
    int instances;
    double class_bytes;
  };
  const Want want[] = {{"all-to-all-v", "mesh", 1, 4, 4 * MiB, "ep0", 24, 117440512.0},
                       {"all-reduce", "rdh", 12, 8, 2 * MiB, "world", 8, 16777216.0}};
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& c = cal["cases"][i];
    const Want& e = want[i];
    EXPECT_EQ(c["op"], e.op);
    EXPECT_EQ(c["ran"], e.ran);
    EXPECT_EQ(c["pattern"], e.pattern);
    EXPECT_EQ(c["ranks"], e.ranks);
    EXPECT_EQ(c["bytes_per_rank"], e.bytes);
    EXPECT_EQ(c["workload"]["group"], e.group);
    EXPECT_EQ(c["workload"]["instances"], e.instances);
    EXPECT_EQ(c["workload"]["class_bytes"].get<double>(), e.class_bytes);
    EXPECT_EQ(c["applied"], true) << c.dump();
  }
  std::filesystem::remove_all(dir);
}

// An all_to_all_v class's case is its median instance as the members ran it: each member sends
// its own per-peer sizes, then the instance transposed (each sends what it received). 4 ranks on
// the Trn2 instance, one group; each rank's "dispatch" sends 4 MiB to rank 0 and 1 MiB to each
// other member (a busiest receiver, as a routed MoE dispatch has), so its transpose has a
// busiest sender: rank 0 sends 4 MiB to each member, the others 1 MiB. The case's packet time is
// that of the same two collectives run directly on the packet fabric (the calibration's
// settings: sim at its defaults, no fast-forward), to the picosecond. With a name repeated on a
// member the instance cannot be told apart, and the representative's sizes rotate as before.
TEST(FlowCalibration, AllToAllVCaseIsTheInstanceAndItsTranspose) {
  const auto dir = test::fresh_dir("flow", "cal-a2av");
  ::setenv("TRNSIM_CACHE_DIR", (dir / "cache").c_str(), 1);
  ::unsetenv("TRNSIM_NO_CACHE");
  constexpr std::uint64_t MiB = 1 << 20;
  const std::vector<std::uint64_t> row = {4 * MiB, MiB, MiB, MiB};
  const auto trace = [&](bool transposed_too, const std::string& second_name) {
    nlohmann::json w = {{"format", "trnsim-trace"}, {"version", 1}, {"name", "hot-receiver"},
                        {"ranks", 4}};
    w["groups"] = {{"ep", {0, 1, 2, 3}}};
    for (int r = 0; r < 4; ++r) {
      nlohmann::json ops = nlohmann::json::array();
      ops.push_back({{"id", 0}, {"name", "dispatch"}, {"op", "all_to_all_v"}, {"group", "ep"},
                     {"send_bytes", row}});
      if (transposed_too) {
        // What rank r received from each member: 4 MiB from every one if r is 0, else 1 MiB.
        ops.push_back({{"id", 1}, {"name", second_name}, {"op", "all_to_all_v"}, {"group", "ep"},
                       {"send_bytes", std::vector<std::uint64_t>(4, row[std::size_t(r)])},
                       {"deps", {0}}});
      }
      w["rank_ops"].push_back({{"rank", r}, {"ops", ops}});
    }
    return w;
  };
  const auto write = [&](const std::string& name, const nlohmann::json& w) {
    std::ofstream(dir / name) << w.dump();
    return (dir / name).string();
  };
  const std::string config = std::string("run --config ") + TRNSIM_SOURCE_DIR +
                             "/configs/racks/trn2-instance.json --trace ";
  const auto cal = calibrated_twice(config + write("one.json", trace(false, "")) +
                                        " --set sim.fidelity=fast"
                                        " --set rack.fabric.flow_calibration=workload",
                                    "cal-a2av");
  ASSERT_EQ(cal["cases"].size(), 1u) << cal.dump();
  const auto& c = cal["cases"][0];
  EXPECT_EQ(c["op"], "all-to-all-v");
  EXPECT_EQ(c["workload"]["instance"], "dispatch");
  EXPECT_EQ(c["workload"]["rows"], "own, then transposed");
  EXPECT_EQ(c["bytes_per_rank"], 7 * MiB);
  // The same two collectives, run outright on the packet fabric.
  const auto out = dir / "direct";
  const auto direct = test::run_trnsim(config + write("both.json", trace(true, "combine")) +
                                       " --set sim.fidelity=detailed --set sim.fast_forward=false"
                                       " --out " + out.string());
  ASSERT_EQ(direct.code, 0) << direct.out;
  const auto report = nlohmann::json::parse(test::read_text(out / "report.json"));
  EXPECT_NEAR(c["packet_ns"].get<double>(),
              report["performance"]["step_time_ns"].get<double>(), 1e-3);
  // A name met twice on a member: the representative's sizes, rotated.
  const auto twice = calibrated_twice(config + write("twice.json", trace(true, "dispatch")) +
                                          " --set sim.fidelity=fast"
                                          " --set rack.fabric.flow_calibration=workload",
                                      "cal-a2av-twice");
  ASSERT_EQ(twice["cases"].size(), 1u) << twice.dump();
  EXPECT_EQ(twice["cases"][0]["workload"]["rows"], "rotated");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trnsim::model
