// SPDX-License-Identifier: MIT
// Contention cases computed by hand, run at both network tiers (the packet fabric with either
// switch queueing, and the flow network): two flows into one output port, an incast of four
// senders, a permutation without contention, and three flows from one input against one from
// another (the output arbiter's share per input). Each tier must give the hand-computed times
// within kTolerance. Each TEST elaborates once (its own CTest process).
//
// The topology is a star: chips c0..c3 on one switch (150 ns), every link 100 GB/s and 100 ns.
// A transfer is 64 packets of 4096 B; a packet is 4096 + 16 B of header = 17 flits of 256 B =
// 4,352 wire bytes, 43.52 ns on a link. Fixed terms of a transfer crossing the switch: 500 ns of
// endpoint overhead at each end, two links of 100 ns, the switch's 150 ns, and one flit (2.56 ns)
// for the second hop (cut-through): L = 1,352.56 ns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../common/topologies.hpp"
#include "common/block.hpp"
#include "fabric/fabric.hpp"
#include "flow/flow_network.hpp"
#include "trnsim/resolve/resolve.hpp"

// libsystemc's own main() needs sc_main; GoogleTest's main() is the one that runs.
int sc_main(int, char**) { return 1; }

namespace trnsim::model {
namespace {

using topo::ChipId;

constexpr double kPacketNs = 43.52;        // 4,352 wire bytes at 100 GB/s
constexpr std::uint64_t kPackets = 64;     // per transfer
constexpr std::uint64_t kBytes = kPackets * 4096;
constexpr double kFixedNs = 500 + 100 + 150 + 2.56 + 100 + 500;  // L above
// The packet fabric shares an output one packet at a time, so a transfer's end can be a few
// packet times (43.52 ns each) off the fluid value; 1 % of the shortest case (4,137.84 ns) is
// 41 ns, about one packet.
constexpr double kTolerance = 0.01;

// flow: max-min (rack.fabric.flow_contention max_min); flow_coupled: coupled contention;
// flow_arbiter: arbiter-fair sharing.
enum class Tier { packet_voq, packet_input_fifo, flow, flow_coupled, flow_arbiter };

topo::Topology star() {
  topo::TopologySpec s;
  for (const char* c : {"c0", "c1", "c2", "c3"}) s.nodes.push_back(test::node(c, topo::NodeKind::chip));
  s.nodes.push_back(test::node("s", topo::NodeKind::switch_, 4, Duration(150e-9)));
  for (const char* c : {"c0", "c1", "c2", "c3"}) s.links.push_back(test::link(c, "s", 100, 100));
  return test::build(s);
}

// The network p.model names ("flow" or "packet") on `topo`, with the chips' memories if given.
std::unique_ptr<Network> make_network(const topo::Topology& topo, const config::FabricParams& p,
                                      std::vector<MemoryPort*> memories = {}) {
  const auto plan = resolve::plan_fabric(p, topo);
  if (p.model == "flow") {
    return std::make_unique<FlowNetwork>("net", topo, plan, std::move(memories));
  }
  return std::make_unique<Fabric>("net", topo, plan, std::move(memories));
}

// Runs `pairs` (source, destination) of `bytes` each, all started at time 0, on the network p
// names on `topo`; the completion times in ns, in the order of `pairs`.
std::vector<double> run_pairs(const topo::Topology& topo, const config::FabricParams& p,
                              const std::vector<std::pair<int, int>>& pairs,
                              std::uint64_t bytes) {
  const std::unique_ptr<Network> net = make_network(topo, p);
  std::vector<TransferHandle> h(pairs.size());
  sc_core::sc_spawn([&] {
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      h[i] = net->start({ChipId{std::uint32_t(pairs[i].first)},
                         ChipId{std::uint32_t(pairs[i].second)}, bytes, i + 1, 0, 0});
    }
  });
  sc_core::sc_start();
  std::vector<double> ends;
  for (const auto& t : h) {
    EXPECT_TRUE(t.done());
    ends.push_back(t.done() ? t.record().completed.to_seconds() * 1e9 : 0.0);
  }
  return ends;
}

// Runs `pairs` (source, destination), all started at time 0, on `tier`; the completion times
// in ns, in the order of `pairs`.
// `bytes` per transfer.
std::vector<double> run_tier(Tier tier, const std::vector<std::pair<int, int>>& pairs,
                             std::uint64_t bytes = kBytes) {
  static const topo::Topology topo = star();
  const bool flow =
      tier == Tier::flow || tier == Tier::flow_coupled || tier == Tier::flow_arbiter;
  auto p = test::fabric_params(4096, flow ? "flow" : "packet");
  p.queueing = tier == Tier::packet_input_fifo ? config::FabricQueueing::input_fifo
                                               : config::FabricQueueing::voq;
  p.flow_contention = tier == Tier::flow_coupled   ? config::FlowContention::coupled
                      : tier == Tier::flow_arbiter ? config::FlowContention::arbiter
                                                   : config::FlowContention::max_min;
  return run_pairs(topo, p, pairs, bytes);
}

void expect_near_rel(double got, double want, const char* what) {
  EXPECT_NEAR(got, want, kTolerance * want) << what << ": " << got << " ns against " << want;
}

// Two flows into one output port (c0 -> c2, c1 -> c2): the output c2 is the bottleneck, each
// flow gets half of it. Both end after 2 x 64 packet times on that link: L + 128 x 43.52 =
// 6,923.12 ns (the flow tier ends both then; the packet fabric ends the first one packet time
// earlier, since the output alternates between the inputs).
void two_into_one(Tier tier) {
  const auto ends = run_tier(tier, {{0, 2}, {1, 2}});
  const double want = kFixedNs + 2 * kPackets * kPacketNs;
  EXPECT_DOUBLE_EQ(want, 6923.12);
  for (std::size_t i = 0; i < ends.size(); ++i) {
    SCOPED_TRACE(i);
    expect_near_rel(ends[i], want, "flow");
  }
  // The later of the two ends exactly then at both tiers: the output is never idle.
  EXPECT_NEAR(std::max(ends[0], ends[1]), want, 1e-3);
}

// Incast of N = 3 senders (c0, c1, c3 -> c2): the last byte arrives after N x size on the
// output link, N x 64 x 43.52 ns, plus L: 9,708.4 ns; each sender gets a third of the output.
void incast(Tier tier) {
  const auto ends = run_tier(tier, {{0, 2}, {1, 2}, {3, 2}});
  const double want = kFixedNs + 3 * kPackets * kPacketNs;
  EXPECT_DOUBLE_EQ(want, 9708.4);
  for (std::size_t i = 0; i < ends.size(); ++i) {
    SCOPED_TRACE(i);
    expect_near_rel(ends[i], want, "sender");
  }
  EXPECT_NEAR(std::max({ends[0], ends[1], ends[2]}), want, 1e-3);
}

// A permutation (c0 -> c1 -> c2 -> c3 -> c0): no two flows share a link direction, so each runs
// at the full 100 GB/s: L + 64 x 43.52 = 4,137.84 ns, at both tiers to the picosecond.
void permutation(Tier tier) {
  const auto ends = run_tier(tier, {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
  const double want = kFixedNs + kPackets * kPacketNs;
  EXPECT_DOUBLE_EQ(want, 4137.84);
  for (std::size_t i = 0; i < ends.size(); ++i) {
    EXPECT_NEAR(ends[i], want, 1e-3) << "flow " << i;
  }
}

TEST(TiersAgree, TwoIntoOneOutputPacketVoq) { two_into_one(Tier::packet_voq); }
TEST(TiersAgree, TwoIntoOneOutputPacketInputFifo) { two_into_one(Tier::packet_input_fifo); }
TEST(TiersAgree, TwoIntoOneOutputFlow) { two_into_one(Tier::flow); }
TEST(TiersAgree, IncastOfThreePacketVoq) { incast(Tier::packet_voq); }
TEST(TiersAgree, IncastOfThreePacketInputFifo) { incast(Tier::packet_input_fifo); }
TEST(TiersAgree, IncastOfThreeFlow) { incast(Tier::flow); }
TEST(TiersAgree, PermutationPacketVoq) { permutation(Tier::packet_voq); }
TEST(TiersAgree, PermutationPacketInputFifo) { permutation(Tier::packet_input_fifo); }
TEST(TiersAgree, PermutationFlow) { permutation(Tier::flow); }
TEST(TiersAgree, TwoIntoOneOutputFlowCoupled) { two_into_one(Tier::flow_coupled); }
TEST(TiersAgree, IncastOfThreeFlowCoupled) { incast(Tier::flow_coupled); }
TEST(TiersAgree, PermutationFlowCoupled) { permutation(Tier::flow_coupled); }
TEST(TiersAgree, TwoIntoOneOutputFlowArbiter) { two_into_one(Tier::flow_arbiter); }
TEST(TiersAgree, IncastOfThreeFlowArbiter) { incast(Tier::flow_arbiter); }
TEST(TiersAgree, PermutationFlowArbiter) { permutation(Tier::flow_arbiter); }

// Three transfers from one input and one from another into one output (c0 -> c2 three times,
// c1 -> c2): the switch's output arbiter takes its two inputs in turn, so c1's transfer gets
// half of c2's link and ends after 2 x 64 packet times, L + 128 x 43.52 = 6,923.12 ns; c0's
// three share the other half, then the whole link, and end after 256: L + 256 x 43.52 =
// 12,493.68 ns. (The packet fabric ends c1's one packet time early, as in two_into_one, and
// c0's three in its last packet times: c0's interface gives them packets in turn but their
// last ones queue behind each other; measured: 12,319.60, 12,493.68 and 12,450.16 ns.) Max-min
// gives the four a quarter each: all end at 12,493.68 ns.
std::vector<double> three_and_one(Tier tier) {
  return run_tier(tier, {{0, 2}, {0, 2}, {0, 2}, {1, 2}});
}

constexpr double kThreeNs = kFixedNs + 256 * kPacketNs;
constexpr double kOneNs = kFixedNs + 128 * kPacketNs;

void three_and_one_arbiter(Tier tier) {
  EXPECT_DOUBLE_EQ(kThreeNs, 12493.68);
  const auto ends = three_and_one(tier);
  for (const std::size_t i : {0u, 1u, 2u}) {
    EXPECT_LE(ends[i], kThreeNs + 1e-3) << i;
    EXPECT_GE(ends[i], kThreeNs - 4 * kPacketNs - 1e-3) << i;
  }
  EXPECT_NEAR(std::max({ends[0], ends[1], ends[2]}), kThreeNs, 1e-3);
  expect_near_rel(ends[3], kOneNs, "c1 -> c2");
}

TEST(TiersAgree, ThreeAndOneIntoOneOutputPacketVoq) { three_and_one_arbiter(Tier::packet_voq); }
TEST(TiersAgree, ThreeAndOneIntoOneOutputFlowArbiter) {
  three_and_one_arbiter(Tier::flow_arbiter);
}
TEST(TiersAgree, ThreeAndOneIntoOneOutputFlowMaxMin) {
  const auto ends = three_and_one(Tier::flow);
  for (std::size_t i = 0; i < ends.size(); ++i) EXPECT_NEAR(ends[i], kThreeNs, 1e-3) << i;
}

// One input carrying a flow to a congested output and one to a free output (coupled
// contention, docs/models/fidelity.md): c0 -> c2 (A) and c0 -> c3 (B) share c0's link; c1 -> c2
// and c3 -> c2 make the output to c2 an incast of three. Each transfer is 640 packets (4,352
// wire bytes, 43.52 ns at 100 GB/s each).
//
// Max-min: the three into c2 get a third of its link each; B takes the rest of c0's link, two
// thirds, and ends after 640 / (2/3) = 960 packet times: L + 960 x 43.52 = 43,131.76 ns; the
// three into c2 after 1,920: L + 1,920 x 43.52 = 84,910.96 ns.
//
// The packet fabric: c0's interface gives A and B packets in turn, and both enter the switch's
// one receive buffer for c0's link (VC 0: 187 flits, 11 packets; the credit loop and two
// packets). A's packets leave it one per three packet times (the output to c2 takes its three
// inputs in turn), B's at once. While the buffer fills, c0's link runs at full rate, a packet of
// A and one of B per two packet times, and A gains 1/2 - 1/3 = 1/6 of a packet per packet time;
// once A's packets fill the buffer (at most its 11 packets), the link is stalled but for the
// packets the output to c2 frees: one of A and one of B per three packet times. So B ends after
// 3 x (640 - K) packet times, K the packets of A held in the buffer when it filled,
// 0 < K <= 11: between L + 1,887 x 43.52 = 83,474.80 and L + 1,920 x 43.52 = 84,910.96 ns; the
// three into c2 end at L + 1,920 x 43.52 as in the incast. (It gives K = 4: B ends at
// 84,393.12 ns, 1,908 packet times; of the 11 packets of buffer, about 8 are the credit loop's,
// 350 ns x 100 GB/s / 4,352 B = 8.04, in flight on the link or as credits.)
//
// Coupled contention (the fluid limit of that buffer, K = 0): A is limited at its second hop,
// so the flows sharing its first hop's buffer are held to its rate; all four end at
// L + 1,920 x 43.52 = 84,910.96 ns. Max-min puts B 48 % early.
std::vector<double> congested_and_free(Tier tier) {
  return run_tier(tier, {{0, 2}, {0, 3}, {1, 2}, {3, 2}}, 640 * 4096);
}

constexpr double kCongestedNs = kFixedNs + 1920 * kPacketNs;
constexpr double kFreeMaxMinNs = kFixedNs + 960 * kPacketNs;

TEST(TiersAgree, CongestedAndFreeOutputPacketVoq) {
  EXPECT_DOUBLE_EQ(kCongestedNs, 84910.96);
  const auto ends = congested_and_free(Tier::packet_voq);
  EXPECT_GE(ends[1], kFixedNs + 1887 * kPacketNs - 1e-3);
  EXPECT_LE(ends[1], kCongestedNs + 1e-3);
  for (const std::size_t i : {0u, 2u, 3u}) expect_near_rel(ends[i], kCongestedNs, "into c2");
}

TEST(TiersAgree, CongestedAndFreeOutputFlowCoupled) {
  const auto ends = congested_and_free(Tier::flow_coupled);
  for (std::size_t i = 0; i < ends.size(); ++i) EXPECT_NEAR(ends[i], kCongestedNs, 1e-3) << i;
}

TEST(TiersAgree, CongestedAndFreeOutputFlowMaxMin) {
  EXPECT_DOUBLE_EQ(kFreeMaxMinNs, 43131.76);
  const auto ends = congested_and_free(Tier::flow);
  EXPECT_NEAR(ends[1], kFreeMaxMinNs, 1e-3);
  for (const std::size_t i : {0u, 2u, 3u}) EXPECT_NEAR(ends[i], kCongestedNs, 1e-3) << i;
}

// One-packet transfers (rack.fabric.flow_packets,
// docs/models/fidelity.md#one-packet-transfers-issue-30): `pairs` of one packet of `bytes` each,
// all started at time 0 on `topo`, at the packet fabric ("packet") or the flow network with the
// lane or as fluid flows; the completion times in ns, smallest first.
std::vector<double> run_packets(const topo::Topology& topo, const std::string& model,
                                config::FlowPackets mode,
                                const std::vector<std::pair<int, int>>& pairs,
                                std::uint64_t bytes,
                                config::FabricCutThrough ct = config::FabricCutThrough::share) {
  auto p = test::fabric_params(4096, model);
  p.flow_packets = mode;
  p.cut_through = ct;
  std::vector<double> ends = run_pairs(topo, p, pairs, bytes);
  std::sort(ends.begin(), ends.end());
  return ends;
}

// c0, c1 and c3 each send one packet of 4,096 B (43.52 ns on a link) to c2 at time 0. The output
// to c2 sends them one after another: they end at L + 43.52, L + 87.04 and L + 130.56 ns. The
// packet fabric and the lane end them so; the fluid flow network shares the output among the
// three, which all end at the last of those times.
constexpr double kPacketsIntoOne[] = {1396.08, 1439.60, 1483.12};

void packets_into_one(const std::string& model, config::FlowPackets mode) {
  static const topo::Topology topo = star();
  for (int k = 0; k < 3; ++k) EXPECT_DOUBLE_EQ(kPacketsIntoOne[k], kFixedNs + (k + 1) * kPacketNs);
  const auto ends = run_packets(topo, model, mode, {{0, 2}, {1, 2}, {3, 2}}, 4096);
  ASSERT_EQ(ends.size(), 3u);
  for (int k = 0; k < 3; ++k) {
    const double want = mode == config::FlowPackets::fluid && model == "flow" ? kPacketsIntoOne[2]
                                                                              : kPacketsIntoOne[k];
    EXPECT_NEAR(ends[std::size_t(k)], want, 1e-3) << "packet " << k;
  }
}

TEST(TiersAgree, PacketsIntoOneOutputPacket) { packets_into_one("packet", config::FlowPackets::lane); }
TEST(TiersAgree, PacketsIntoOneOutputFlowLane) { packets_into_one("flow", config::FlowPackets::lane); }
TEST(TiersAgree, PacketsIntoOneOutputFlowFluid) { packets_into_one("flow", config::FlowPackets::fluid); }

// One packet of 4,096 B (4,352 wire bytes, 17 flits) from c0 over a 50 GB/s link to a switch
// (150 ns) and on over a 100 GB/s link to c1, both links 100 ns. Cut through, its head reaches
// the switch after one flit at 50 GB/s and the link's 100 ns, 105.12 ns; the switch starts it on
// the second link 150 ns later, when its tail (87.04 ns at 50 GB/s, plus 100 ns) has long
// arrived, so it leaves at 100 GB/s: 43.52 ns, then 100 ns to c1. With 500 ns of endpoint
// overhead at each end: 500 + 105.12 + 150 + 43.52 + 100 + 500 = 1,398.64 ns, the packet
// fabric's time with either cut-through and the lane's. A fluid flow moves at the slower link's
// rate end to end, 87.04 ns, plus the fixed terms (two links, the switch, a flit of the second
// link): 500 + 87.04 + 100 + 150 + 2.56 + 100 + 500 = 1,439.60 ns.
void slow_then_fast(const std::string& model, config::FlowPackets mode,
                    config::FabricCutThrough ct = config::FabricCutThrough::share) {
  topo::TopologySpec spec;
  spec.nodes = {test::node("c0", topo::NodeKind::chip), test::node("c1", topo::NodeKind::chip),
                test::node("s", topo::NodeKind::switch_, 2, Duration(150e-9))};
  spec.links = {test::link("c0", "s", 50, 100), test::link("s", "c1", 100, 100)};
  static const topo::Topology topo = test::build(spec);
  const auto ends = run_packets(topo, model, mode, {{0, 1}}, 4096, ct);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_DOUBLE_EQ(500 + 105.12 + 150 + 43.52 + 100 + 500, 1398.64);
  const bool fluid = model == "flow" && mode == config::FlowPackets::fluid;
  EXPECT_NEAR(ends[0], fluid ? 1439.60 : 1398.64, 1e-3);
}
TEST(TiersAgree, SlowThenFastLinkPacketHold) {
  slow_then_fast("packet", config::FlowPackets::lane, config::FabricCutThrough::hold);
}

TEST(TiersAgree, SlowThenFastLinkPacket) { slow_then_fast("packet", config::FlowPackets::lane); }
TEST(TiersAgree, SlowThenFastLinkFlowLane) { slow_then_fast("flow", config::FlowPackets::lane); }
TEST(TiersAgree, SlowThenFastLinkFlowFluid) { slow_then_fast("flow", config::FlowPackets::fluid); }

// A fast-forwarded transfer (Network::account) charges the links and switch of its route what
// the simulated transfer puts on them, at both tiers: c0 -> c2 crosses c0 -> s and s -> c2, each
// busy 64 x 43.52 = 2,785.28 ns with 64 x 4,352 wire bytes; the switch forwards 64 packets. The
// simulated packet transfer (no memory, so a packet's link time is its serialisation) is the
// reference; every other link direction stays idle.
// Two chips behind one switch send to two chips behind another over one link twice as fast as
// theirs (c0 -> c2 and c1 -> c3; s0 -- s1 200 GB/s, every other link 100 GB/s and 100 ns), in
// packets of 64 KiB (64 KiB + 16 B = 257 flits = 65,792 wire bytes: 657.92 ns at 100 GB/s,
// 328.96 ns at 200), 4 per transfer. The fast link carries both at their full 100 GB/s, as a
// link of two ports would: each transfer takes L2 + 4 x 657.92 ns, where L2 = 500 + 3 x 100
// (links) + 2 x 150 (switches) + 1.28 (a flit on the fast link) + 2.56 (a flit on the last link)
// + 500 = 1,603.84 ns: 4,235.52 ns, and the fast link is busy for its wire bytes at 200 GB/s,
// 4 x 328.96 ns per transfer. That is the flow tier, and the packet fabric with `cut_through:
// share`. With `hold` (the model before issue 30) s0 starts a packet on the fast link 150 ns
// after its head arrived and keeps the link until its tail has arrived at 100 GB/s plus a flit:
// 657.92 - 2.56 - 150 + 1.28 = 506.64 ns per packet, 1.54 times its wire time, alone.
struct FasterMiddle {
  std::vector<double> ends;  // ns
  double uplink_busy_ns = 0;  // s0 -> s1
};

topo::Topology faster_middle() {
  topo::TopologySpec s;
  for (const char* c : {"c0", "c1", "c2", "c3"}) s.nodes.push_back(test::node(c, topo::NodeKind::chip));
  s.nodes.push_back(test::node("s0", topo::NodeKind::switch_, 3, Duration(150e-9)));
  s.nodes.push_back(test::node("s1", topo::NodeKind::switch_, 3, Duration(150e-9)));
  s.links.push_back(test::link("c0", "s0", 100, 100));
  s.links.push_back(test::link("c1", "s0", 100, 100));
  s.links.push_back(test::link("s0", "s1", 200, 100));
  s.links.push_back(test::link("c2", "s1", 100, 100));
  s.links.push_back(test::link("c3", "s1", 100, 100));
  return test::build(s);
}

FasterMiddle run_faster_middle(const std::string& model, config::FabricCutThrough ct, int transfers) {
  static const topo::Topology topo = faster_middle();
  auto p = test::fabric_params(65536, model);
  p.cut_through = ct;
  const auto plan = resolve::plan_fabric(p, topo);
  std::unique_ptr<Network> net;
  const sc_core::sc_object* root = nullptr;
  if (model == "flow") {
    auto f = std::make_unique<FlowNetwork>("net", topo, plan);
    root = f.get();
    net = std::move(f);
  } else {
    auto f = std::make_unique<Fabric>("net", topo, plan);
    root = f.get();
    net = std::move(f);
  }
  std::vector<TransferHandle> h(static_cast<std::size_t>(transfers));
  sc_core::sc_spawn([&] {
    for (int i = 0; i < transfers; ++i) {
      h[std::size_t(i)] = net->start({ChipId{std::uint32_t(i)}, ChipId{std::uint32_t(i + 2)},
                                      kBytes, std::uint64_t(i + 1), 0, 0});
    }
  });
  sc_core::sc_start();
  FasterMiddle r;
  for (const auto& t : h) {
    EXPECT_TRUE(t.done());
    r.ends.push_back(t.done() ? t.record().completed.to_seconds() * 1e9 : 0.0);
  }
  net->finish(sc_core::sc_time(10, sc_core::SC_US));
  bool found = false;
  for (const auto& b : collect_stats(Duration(10e-6), root)) {
    if (b.name != "net.link2.to_s1") continue;
    r.uplink_busy_ns = find_stat(b, LinkDirectionStats::busy)->value * 1e9;
    found = true;
  }
  EXPECT_TRUE(found);
  return r;
}

constexpr double kMidPackets = 4;  // of 64 KiB: kBytes
constexpr double kFasterMiddleNs = 500 + 3 * 100 + 2 * 150 + 1.28 + 2.56 + 500 + kMidPackets * 657.92;

TEST(TiersAgree, FasterMiddleLinkCarriesBothFlow) {
  EXPECT_DOUBLE_EQ(kFasterMiddleNs, 4235.52);
  const auto r = run_faster_middle("flow", config::FabricCutThrough::share, 2);
  for (double e : r.ends) EXPECT_NEAR(e, 4235.52, 1e-3);
  EXPECT_NEAR(r.uplink_busy_ns, 2 * kMidPackets * 328.96, 1e-3);
}

TEST(TiersAgree, FasterMiddleLinkCarriesBothPacketShare) {
  const auto r = run_faster_middle("packet", config::FabricCutThrough::share, 2);
  // Both first packets reach s0 together and one waits for the other on the fast link
  // (328.96 ns): the packet fabric shares it a packet at a time, so each ends within one
  // packet time at 100 GB/s (657.92 ns) after the fluid value (here 4,564.48 and 4,586.80).
  for (double e : r.ends) {
    EXPECT_GE(e, 4235.52 - 1e-3);
    EXPECT_LE(e, 4235.52 + 657.92);
  }
  EXPECT_NEAR(r.uplink_busy_ns, 2 * kMidPackets * 328.96, 1e-3);
}

TEST(TiersAgree, FasterMiddleLinkAlonePacketShare) {
  const auto r = run_faster_middle("packet", config::FabricCutThrough::share, 1);
  EXPECT_NEAR(r.ends.at(0), 4235.52, 1e-3);
  EXPECT_NEAR(r.uplink_busy_ns, kMidPackets * 328.96, 1e-3);
}

TEST(TiersAgree, FasterMiddleLinkAloneIsHeldPacketHold) {
  const auto r = run_faster_middle("packet", config::FabricCutThrough::hold, 1);
  EXPECT_NEAR(r.ends.at(0), 4235.52, 1e-3);
  EXPECT_NEAR(r.uplink_busy_ns, kMidPackets * 506.64, 1e-3);
}

TEST(TiersAgree, AccountedTransferChargesWhatTheSimulatedOneUses) {
  static const topo::Topology topo = star();
  const auto packet_plan = resolve::plan_fabric(test::fabric_params(4096, "packet"), topo);
  const auto flow_plan = resolve::plan_fabric(test::fabric_params(4096, "flow"), topo);
  Fabric simulated("simulated", topo, packet_plan);
  Fabric accounted("accounted", topo, packet_plan);
  FlowNetwork flow("flow", topo, flow_plan);
  EXPECT_TRUE(accounted.charges_accounted());
  const TransferRequest r{ChipId{0}, ChipId{2}, kBytes, 1, 0, 0};
  TransferHandle h;
  sc_core::sc_spawn([&] {
    h = simulated.start(r);
    accounted.account(r);
    flow.account(r);
  });
  sc_core::sc_start();
  ASSERT_TRUE(h.done());
  const sc_core::sc_time end = sc_core::sc_time(10, sc_core::SC_US);
  for (Network* n : std::initializer_list<Network*>{&simulated, &accounted, &flow}) n->finish(end);
  EXPECT_EQ(accounted.totals().transfers_started, 0u);  // nothing simulated

  // Link directions by name under each network ("link0.to_s").
  auto links = [&](const sc_core::sc_object& root) {
    std::map<std::string, std::vector<double>> out;
    const std::string prefix = std::string(root.name()) + ".";
    for (const auto& b : collect_stats(Duration(10e-6), &root)) {
      const Stat* busy = find_stat(b, LinkDirectionStats::busy);
      if (!busy) continue;
      out[b.name.substr(prefix.size())] = {
          busy->value * 1e9, find_stat(b, LinkDirectionStats::bytes)->value,
          find_stat(b, LinkDirectionStats::wire_bytes)->value, b.utilisation.value_or(-1)};
    }
    return out;
  };
  const auto want = links(simulated);
  ASSERT_EQ(want.size(), 8u);  // 4 links, 2 directions
  for (const auto& [name, v] : want) {
    const bool on_route = name == "link0.to_s" || name == "link2.to_c2";
    SCOPED_TRACE(name);
    EXPECT_NEAR(v[0], on_route ? kPackets * kPacketNs : 0.0, 1e-6);
    EXPECT_DOUBLE_EQ(v[1], on_route ? double(kBytes) : 0.0);
    EXPECT_DOUBLE_EQ(v[2], on_route ? kPackets * 4352.0 : 0.0);
    EXPECT_NEAR(v[3], on_route ? 2785.28 / 10000 : 0.0, 1e-9);
  }
  for (const sc_core::sc_object* got : std::initializer_list<const sc_core::sc_object*>{
           &accounted, &flow}) {
    const auto g = links(*got);
    ASSERT_EQ(g.size(), want.size()) << got->name();
    for (const auto& [name, v] : want) {
      SCOPED_TRACE(std::string(got->name()) + " " + name);
      ASSERT_EQ(g.count(name), 1u);
      for (std::size_t i = 0; i < v.size(); ++i) {
        EXPECT_NEAR(g.at(name)[i], v[i], 1e-6 * (1 + v[i]));
      }
    }
  }
  // The link and switch energy counted: the same wire bytes on the same blocks.
  const auto sim_actions = collect_actions(&simulated);
  const auto acc_actions = collect_actions(&accounted);
  ASSERT_TRUE(sim_actions.count(Action::link) && sim_actions.count(Action::switch_));
  EXPECT_DOUBLE_EQ(acc_actions.at(Action::link).quantity, 2 * kPackets * 4352.0);
  EXPECT_DOUBLE_EQ(acc_actions.at(Action::link).quantity, sim_actions.at(Action::link).quantity);
  EXPECT_DOUBLE_EQ(acc_actions.at(Action::switch_).quantity,
                   sim_actions.at(Action::switch_).quantity);
}


// A chip that relays onto a slower link (rack.fabric.chip_relay, docs/models/fabric.md "Relays"):
// chips a, b, r, d; a, b and r on switch s (150 ns), r also linked to d and forwarding in 50 ns;
// every link 100 ns, 100
// GB/s but r -> d at 25 GB/s (a packet 174.08 ns there). R (a -> d, relayed by r) and B (b -> r)
// share the link s -> r, on the same hop (VC 1: one receive buffer at r), and are 64 packets each.
//
// memory (r stores what it relays): s -> r takes its two inputs in turn, so B gets half of it and
// ends as two_into_one's flows do, L + 128 x 43.52 = 6,923.12 ns. R is limited by r -> d alone:
// its first packet's head reaches r after 500 + 100 + 150 + 2.56 + 100 ns (as a two-hop
// transfer's) and is forwarded after 50, then r -> d carries its 64 packets back to back, 64 x
// 174.08 ns, then 100 ns of link and 500 of overhead: 12,643.68 ns (its packets reach r every 87.04 ns, faster than they
// leave, and wait in r's memory).
// router (r forwards cut through): R's packets wait for r -> d in r's receive buffer on VC 1, the
// buffer fills, and B's packets, which need room in the same buffer, enter only as R's leave, at
// about R's rate on r -> d: B ends after about 64 x 174.08 ns, well after 6,923.12. (Measured:
// memory 6,879.60 and 12,689.76 ns for B and R, one packet time off the hand values, as in
// two_into_one; router 11,092.48 and 12,689.76; flow 5,066.27 and 12,653.92.)
// The flow tier (max-min) has no buffers: R gets 25 GB/s, B the other 75 of s -> r and ends
// after 64 x 43.52 / 0.75 = 3,713.71 ns of data, 5,066.27 ns in all, whichever relay; it
// leaves out a store-and-forward relay's first segment running ahead of its second.
topo::Topology relay_line() {
  topo::TopologySpec s;
  for (const char* c : {"a", "b", "r", "d"}) {
    // r forwards (an explicit chip forwards when it has a latency) in 50 ns.
    s.nodes.push_back(test::node(c, topo::NodeKind::chip, 0, Duration(c[0] == 'r' ? 50e-9 : 0)));
  }
  s.nodes.push_back(test::node("s", topo::NodeKind::switch_, 3, Duration(150e-9)));
  for (const char* c : {"a", "b", "r"}) s.links.push_back(test::link(c, "s", 100, 100));
  s.links.push_back(test::link("r", "d", 25, 100));
  return test::build(s);
}

std::vector<double> run_relay(bool flow, config::ChipRelay relay) {
  static const topo::Topology topo = relay_line();
  auto p = test::fabric_params(4096, flow ? "flow" : "packet");
  p.chip_relay = relay;
  const std::unique_ptr<Network> net = make_network(topo, p);
  // Chips are numbered in the order of their nodes: a 0, b 1, r 2, d 3.
  const auto id = [](std::uint32_t c) { return ChipId{c}; };
  TransferHandle relayed, beside;
  sc_core::sc_spawn([&] {
    relayed = net->start({id(0), id(3), kBytes, 1, 0, 0});
    beside = net->start({id(1), id(2), kBytes, 2, 0, 0});
  });
  sc_core::sc_start();
  EXPECT_TRUE(relayed.done() && beside.done());
  return {relayed.record().completed.to_seconds() * 1e9,
          beside.record().completed.to_seconds() * 1e9};
}

constexpr double kRelayedNs = 500 + 100 + 150 + 2.56 + 100 + 50 + 64 * 174.08 + 100 + 500;

TEST(TiersAgree, RelayThroughMemoryDoesNotHoldBackTheLinkBeforeIt) {
  EXPECT_DOUBLE_EQ(kRelayedNs, 12643.68);
  const auto ends = run_relay(false, config::ChipRelay::memory);
  expect_near_rel(ends[0], kRelayedNs, "relayed");
  expect_near_rel(ends[1], kFixedNs + 2 * kPackets * kPacketNs, "beside");
}

TEST(TiersAgree, RelayThroughARouterHoldsBackTheLinkBeforeIt) {
  const auto ends = run_relay(false, config::ChipRelay::router);
  expect_near_rel(ends[0], kRelayedNs, "relayed");
  // Held to about the relayed transfer's rate: at least 1.5 x its time through memory.
  EXPECT_GT(ends[1], 1.5 * (kFixedNs + 2 * kPackets * kPacketNs)) << ends[1];
}

// A memory that serves every request in 10 ns and counts the bytes read and written.
class CountingMemory : public MemoryPort {
 public:
  sc_core::sc_time access(const MemRequest& q) override {
    (q.write ? written : read) += q.bytes;
    return sc_core::sc_time_stamp() + sc_core::sc_time(10, sc_core::SC_NS);
  }
  std::uint64_t read = 0, written = 0;
};

// The bytes each chip of relay_line reads and writes when a sends kBytes to d through r: a reads
// them and d writes them at both tiers and with either relay; r writes and reads them back with
// `memory` (NetworkInterface::relay_store; the flow network's activate), none with `router`.
std::vector<std::uint64_t> relay_memory_bytes(bool flow, config::ChipRelay relay) {
  static const topo::Topology topo = relay_line();
  auto p = test::fabric_params(4096, flow ? "flow" : "packet");
  p.chip_relay = relay;
  std::vector<CountingMemory> m(4);
  const std::unique_ptr<Network> net = make_network(topo, p, {&m[0], &m[1], &m[2], &m[3]});
  TransferHandle h;
  sc_core::sc_spawn([&] { h = net->start({ChipId{0}, ChipId{3}, kBytes, 1, 0, 0}); });
  sc_core::sc_start();
  EXPECT_TRUE(h.done());
  return {m[0].read, m[0].written, m[2].read, m[2].written, m[3].read, m[3].written};
}

const std::vector<std::uint64_t> kStored{kBytes, 0, kBytes, kBytes, 0, kBytes};
const std::vector<std::uint64_t> kRouted{kBytes, 0, 0, 0, 0, kBytes};

TEST(TiersAgree, ARelayThroughMemoryWritesAndReadsWhatItRelays) {
  EXPECT_EQ(relay_memory_bytes(false, config::ChipRelay::memory), kStored);
}
TEST(TiersAgree, ARelayThroughMemoryWritesAndReadsWhatItRelaysFlow) {
  EXPECT_EQ(relay_memory_bytes(true, config::ChipRelay::memory), kStored);
}
TEST(TiersAgree, ARelayThroughARouterLeavesItsMemoryAlone) {
  EXPECT_EQ(relay_memory_bytes(false, config::ChipRelay::router), kRouted);
}
TEST(TiersAgree, ARelayThroughARouterLeavesItsMemoryAloneFlow) {
  EXPECT_EQ(relay_memory_bytes(true, config::ChipRelay::router), kRouted);
}

TEST(TiersAgree, RelayAtTheFlowTier) {
  const auto ends = run_relay(true, config::ChipRelay::memory);
  expect_near_rel(ends[0], kRelayedNs, "relayed");
  expect_near_rel(ends[1], kFixedNs + kPackets * kPacketNs / 0.75, "beside");
}

}  // namespace
}  // namespace trnsim::model
