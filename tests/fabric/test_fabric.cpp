// SPDX-License-Identifier: MIT
// Fabric model tests with hand-computed expected values. Each TEST elaborates at most once (each
// is its own CTest process).
#include <gtest/gtest.h>


#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fabric/fabric.hpp"
#include "../common/run_trnsim.hpp"
#include "../common/topologies.hpp"
#include "trnsim/error.hpp"
#include "trnsim/resolve/resolve.hpp"

// libsystemc's own main() needs sc_main; GoogleTest's main() is the one that runs.
int sc_main(int, char**) { return 1; }

namespace trnsim::model {
namespace {

using topo::ChipId;
using test::build;
using test::link;
using test::node;
using test::torus4x4;
using test::two_chips;

// Chips a and b feed one switch (150 ns) whose third port leads to chip c.
topo::Topology two_into_one() {
  topo::TopologySpec s;
  s.nodes = {node("a", topo::NodeKind::chip), node("b", topo::NodeKind::chip),
             node("c", topo::NodeKind::chip),
             node("s", topo::NodeKind::switch_, 3, Duration(150e-9))};
  s.links = {link("a", "s", 100, 100), link("b", "s", 100, 100), link("s", "c", 100, 100)};
  return build(s);
}

config::FabricParams params(double packet = 4096) { return test::fabric_params(packet); }

double ns(const sc_core::sc_time& t) { return t.to_seconds() * 1e9; }

// 1000 B + 16 B header = 4 flits = 1024 B; 1024 B / 100 GB/s = 10.24 ns.
TEST(Fabric, OnePacketOverOneLink) {
  const auto topo = two_chips();
  Fabric f("fabric", topo, resolve::plan_fabric(params(), topo));
  TransferHandle h;
  sc_core::sc_spawn([&] { h = f.start({ChipId{0}, ChipId{1}, 1000, 7, 0, 0}); });
  sc_core::sc_start();
  ASSERT_TRUE(h.done());
  const auto& r = h.record();
  EXPECT_DOUBLE_EQ(ns(r.completed), 500 + 10.24 + 100 + 500);
  EXPECT_EQ(r.packets, 1u);
  EXPECT_DOUBLE_EQ(r.last_packet.link.si * 1e9, 100);
  EXPECT_NEAR(r.last_packet.serialisation.si * 1e9, 10.24, 1e-9);
  EXPECT_DOUBLE_EQ(r.last_packet.endpoint.si * 1e9, 1000);
  EXPECT_EQ(r.last_packet.hops, 1);
  EXPECT_EQ(f.completions(ChipId{1}), 1u);
  EXPECT_EQ(f.completions(ChipId{0}), 0u);
}

// 5000 B in 4096 B packets: 4096 + 16 -> 17 flits (43.52 ns) and 904 + 16 -> 4 flits (10.24 ns).
TEST(Fabric, TwoPacketsWithFlitRoundingAndHeader) {
  const auto topo = two_chips();
  Fabric f("fabric", topo, resolve::plan_fabric(params(), topo));
  TransferHandle h;
  sc_core::sc_spawn([&] { h = f.start({ChipId{0}, ChipId{1}, 5000, 0, 0, 0}); });
  sc_core::sc_start();
  ASSERT_TRUE(h.done());
  EXPECT_DOUBLE_EQ(ns(h.record().completed), 500 + 43.52 + 10.24 + 100 + 500);
  EXPECT_EQ(h.record().packets, 2u);
  const auto& d = f.link(topo::LinkId{0}).direction(0);
  EXPECT_DOUBLE_EQ(d.wire_bytes(), 21 * 256.0);
}

// Two transfers of 64 packets (43.52 ns each) on one link take packets in turn. Both become
// eligible at the same time; the one whose start the seed orders first is already sending when
// the other joins the queue, then goes to the back of it: order 1, 1, 2, 1, 2, ... The first ends
// after 126 packet times, the second after 128.
TEST(Fabric, TwoFlowsSharingALinkGetHalfEach) {
  const auto topo = two_chips();
  Fabric f("fabric", topo, resolve::plan_fabric(params(), topo));
  TransferHandle h1, h2;
  sc_core::sc_spawn([&] {
    h1 = f.start({ChipId{0}, ChipId{1}, 64 * 4096, 1, 0, 0});
    h2 = f.start({ChipId{0}, ChipId{1}, 64 * 4096, 2, 0, 0});
  });
  sc_core::sc_start();
  ASSERT_TRUE(h1.done() && h2.done());
  const double t1 = ns(h1.record().completed), t2 = ns(h2.record().completed);
  EXPECT_DOUBLE_EQ(std::min(t1, t2), 500 + 126 * 43.52 + 100 + 500);
  EXPECT_DOUBLE_EQ(std::max(t1, t2), 500 + 128 * 43.52 + 100 + 500);
}

// a and b each send 4 packets to c through switch s at once. Their heads reach the crossbar at
// the same time, 500 + 2.56 (one flit) + 100 + 150 = 752.56 ns; the output serves whichever the
// kernel delivers first, then alternates between its inputs, one packet every 43.52 ns. The
// first source's last packet leaves at slot 6, the second's at slot 7.
TEST(Fabric, SwitchAlternatesFairlyBetweenTwoInputs) {
  const auto topo = two_into_one();
  Fabric f("fabric", topo, resolve::plan_fabric(params(), topo));
  std::vector<std::uint32_t> order;
  f.set_delivery_observer([&](const Packet& p, const sc_core::sc_time&) {
    order.push_back(p.transfer->record.request.src.v);
  });
  TransferHandle ha, hb;
  sc_core::sc_spawn([&] {
    ha = f.start({ChipId{0}, ChipId{2}, 4 * 4096, 1, 0, 0});
    hb = f.start({ChipId{1}, ChipId{2}, 4 * 4096, 2, 0, 0});
  });
  sc_core::sc_start();
  ASSERT_EQ(order.size(), 8u);
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i], order[i % 2]) << "delivery " << i;
  }
  EXPECT_NE(order[0], order[1]);
  const auto& first = order[0] == 0 ? ha : hb;
  const auto& second = order[0] == 0 ? hb : ha;
  EXPECT_DOUBLE_EQ(ns(first.record().completed), 752.56 + 7 * 43.52 + 100 + 500);
  EXPECT_DOUBLE_EQ(ns(second.record().completed), 752.56 + 8 * 43.52 + 100 + 500);
  const auto& b = second.record().last_packet;
  EXPECT_DOUBLE_EQ(b.switching.si * 1e9, 150);
  // Ready at 752.56 + 3 x 43.52 (its source sends back to back), leaves at 752.56 + 7 x 43.52.
  EXPECT_NEAR(b.queueing.si * 1e9, 4 * 43.52, 1e-6);
  EXPECT_EQ(f.vcs(), 2);
}

// Chip 0 (0,0) to chip 10 (2,2) of a 4x4 torus: 4 links, relayed by 3 chips. A 64 B message is
// one 256 B flit, 2 ns per 128 GB/s link.
TEST(Fabric, TorusRouteCrossesExpectedChips) {
  const auto topo = torus4x4();
  Fabric f("fabric", topo, resolve::plan_fabric(params(), topo));
  TransferHandle h;
  sc_core::sc_spawn([&] { h = f.start({ChipId{0}, ChipId{10}, 64, 3, 0, 0}); });
  sc_core::sc_start();
  const auto& b = h.record().last_packet;
  EXPECT_EQ(b.hops, 4);
  EXPECT_DOUBLE_EQ(b.forwarding.si * 1e9, 3 * 50);
  EXPECT_DOUBLE_EQ(b.link.si * 1e9, 4 * 29);
  EXPECT_NEAR(b.serialisation.si * 1e9, 4 * 2, 1e-9);
  EXPECT_DOUBLE_EQ(ns(h.record().completed), 1000 + 4 * (2 + 29) + 3 * 50);
  EXPECT_EQ(f.diameter(), 4);
}

// Every chip sends 64 KiB to every other with receive buffers of one packet: links stall on
// credits, the model's own checks (credits in [0, buffer]) hold, and nothing is lost.
TEST(Fabric, CreditsStayWithinBufferUnderSaturation) {
  const auto topo = torus4x4();
  auto p = params();
  p.vc_buffer = Bytes(17 * 256);  // one 4096 B packet
  Fabric f("fabric", topo, resolve::plan_fabric(p, topo));
  sc_core::sc_spawn([&] {
    for (std::uint32_t a = 0; a < 16; ++a) {
      for (std::uint32_t b = 0; b < 16; ++b) {
        if (a != b) f.start({ChipId{a}, ChipId{b}, 65536, a * 16 + b, 0, 0});
      }
    }
  });
  sc_core::sc_start();
  f.finish(sc_core::sc_time_stamp());
  const auto t = f.totals();
  EXPECT_GT(t.credit_stall_ns, 0);
  EXPECT_EQ(t.transfers_completed, 240u);
  EXPECT_EQ(t.bytes_delivered, 240u * 65536);
  for (std::size_t l = 0; l < f.link_count(); ++l) {
    for (int d = 0; d < 2; ++d) {
      const auto& dir = f.link(topo::LinkId{std::uint32_t(l)}).direction(d);
      EXPECT_EQ(dir.capacity(), 17u);
      EXPECT_LE(dir.max_reserved(), 17);
      for (int vc = 0; vc < f.vcs(); ++vc) EXPECT_EQ(dir.credits(vc), 17);  // all returned
    }
  }
}

// Saturation with packets sprayed over equal-cost paths (so they may overtake each other): every
// payload byte of every transfer arrives exactly once.
TEST(Fabric, ConservationUnderSaturation) {
  const auto topo = torus4x4();
  auto p = params();
  p.spreading = config::FabricSpreading::per_packet;
  Fabric f("fabric", topo, resolve::plan_fabric(p, topo));
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::uint64_t>> seen;
  std::uint64_t duplicates = 0, bytes = 0;
  f.set_delivery_observer([&](const Packet& pk, const sc_core::sc_time&) {
    const auto& r = pk.transfer->record.request;
    if (!seen[{r.src.v, r.dst.v}].insert(pk.offset).second) ++duplicates;
    bytes += pk.payload;
  });
  const std::uint64_t size = 100000;  // 24 full packets and one of 1696 B
  sc_core::sc_spawn([&] {
    for (std::uint32_t a = 0; a < 16; ++a) {
      for (std::uint32_t b = 0; b < 16; ++b) {
        if (a != b) f.start({ChipId{a}, ChipId{b}, size, a * 16 + b, 0, 0});
      }
    }
  });
  sc_core::sc_start();
  f.finish(sc_core::sc_time_stamp());
  const auto t = f.totals();
  EXPECT_EQ(duplicates, 0u);
  EXPECT_EQ(bytes, 240 * size);
  EXPECT_EQ(t.bytes_injected, 240 * size);
  EXPECT_EQ(t.bytes_delivered, 240 * size);
  EXPECT_EQ(t.packets_injected, 240u * 25);
  EXPECT_EQ(t.packets_delivered, 240u * 25);
  EXPECT_EQ(t.packets_in_flight, 0u);
  EXPECT_GT(t.credit_stall_ns, 0);
  for (const auto& [pair, offsets] : seen) EXPECT_EQ(offsets.size(), 25u);
}

// A memory that reads in 200 ns and writes in 300 ns: the packet's tail leaves 200 + 2.56 ns
// after the source overhead, and the destination frees it 300 ns after its tail arrives.
class FixedMemory : public MemoryPort {
 public:
  explicit FixedMemory(double read_ns, double write_ns) : r_(read_ns), w_(write_ns) {}
  sc_core::sc_time access(const MemRequest& q) override {
    ++calls;
    return now() + sc_core::sc_time(q.write ? w_ : r_, sc_core::SC_NS);
  }
  int calls = 0;

 private:
  double r_, w_;
};

TEST(Fabric, MemoryPortsChargeSourceReadAndDestinationWrite) {
  const auto topo = two_chips();
  FixedMemory m0(200, 300), m1(200, 300);
  Fabric f("fabric", topo, resolve::plan_fabric(params(), topo), {&m0, &m1});
  TransferHandle h;
  sc_core::sc_spawn([&] { h = f.start({ChipId{0}, ChipId{1}, 1000, 0, 0, 0}); });
  sc_core::sc_start();
  EXPECT_DOUBLE_EQ(ns(h.record().completed), 500 + 202.56 + 100 + 300 + 500);
  EXPECT_EQ(m0.calls, 1);
  EXPECT_EQ(m1.calls, 1);
}

// Chip 0 of two_chips() issues `n` transfers of 1000 B (4 flits, 10.24 ns; one flit 2.56 ns) to
// chip 1 at the same time, so they share its only output, one packet each; their completion
// times in the order issued.
std::vector<double> transfers_started_together(int n, const config::FabricParams& p,
                                               std::vector<MemoryPort*> memories = {}) {
  const auto topo = two_chips();
  Fabric f("fabric", topo, resolve::plan_fabric(p, topo), std::move(memories));
  std::vector<TransferHandle> h(static_cast<std::size_t>(n));
  sc_core::sc_spawn([&] {
    for (std::uint64_t k = 0; k < h.size(); ++k) {
      h[k] = f.start({ChipId{0}, ChipId{1}, 1000, k, 0, 0});
    }
  });
  sc_core::sc_start();
  std::vector<double> done;
  for (const auto& x : h) done.push_back(ns(x.record().completed));
  return done;
}

// Read-ahead (/rack/fabric/read_ahead_packets) with the 200 ns read, 300 ns write memory on the
// 100 GB/s, 100 ns link: three such transfers, their completion times in order.
std::vector<double> three_transfers_sharing_an_output(int read_ahead) {
  auto p = params();
  p.read_ahead_packets = read_ahead;
  FixedMemory m0(200, 300), m1(200, 300);
  auto done = transfers_started_together(3, p, {&m0, &m1});
  std::sort(done.begin(), done.end());
  EXPECT_EQ(m0.calls, 3);
  EXPECT_EQ(m1.calls, 3);
  return done;
}

// One packet read ahead: all three reads start at 500 ns (after the source overhead) and end at
// 700. The first packet is taken at 500 and waits for its read: its tail leaves at 700 + 2.56 =
// 702.56. The next two were read meanwhile and follow at the link's rate: 702.56 + 10.24 = 712.8
// and 723.04. Each then takes 100 (link) + 300 (write) + 500 (destination overhead).
TEST(Fabric, ReadAheadOverlapsTheReadsOfTransfersSharingAnOutput) {
  const auto done = three_transfers_sharing_an_output(1);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_NEAR(done[0], 702.56 + 900, 1e-6);
  EXPECT_NEAR(done[1], 712.8 + 900, 1e-6);
  EXPECT_NEAR(done[2], 723.04 + 900, 1e-6);
}

// No read ahead: a packet is read when the output takes it and the output waits for the read, so
// the packets leave one read (200) + one flit (2.56) apart: 702.56, 905.12, 1107.68.
TEST(Fabric, WithoutReadAheadTheOutputWaitsForEachRead) {
  const auto done = three_transfers_sharing_an_output(0);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_NEAR(done[0], 702.56 + 900, 1e-6);
  EXPECT_NEAR(done[1], 905.12 + 900, 1e-6);
  EXPECT_NEAR(done[2], 1107.68 + 900, 1e-6);
}

// /rack/fabric/send_order: five such transfers, no memories, back to back on the output. The
// k-th to leave (k = 1..5) completes at 500 + k x 10.24 + 100 + 500.
std::vector<double> five_transfers_started_together(config::FabricSendOrder order) {
  auto p = params();
  p.send_order = order;
  return transfers_started_together(5, p);
}

// issued: they leave in the order issued.
TEST(Fabric, IssuedSendOrderKeepsTheOrderTransfersWereIssuedIn) {
  const auto done = five_transfers_started_together(config::FabricSendOrder::issued);
  ASSERT_EQ(done.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_NEAR(done[k], 1100 + double(k + 1) * 10.24, 1e-6) << "transfer " << k;
  }
}

// seeded (the default): the same five completion times, in an order the seed (1, as a run's
// default) permutes; at seed 1 it is not the order issued.
TEST(Fabric, SeededSendOrderPermutesTransfersStartedTogether) {
  auto done = five_transfers_started_together(config::FabricSendOrder::seeded);
  ASSERT_EQ(done.size(), 5u);
  EXPECT_FALSE(std::is_sorted(done.begin(), done.end()));
  std::sort(done.begin(), done.end());
  for (std::size_t k = 0; k < 5; ++k) EXPECT_NEAR(done[k], 1100 + double(k + 1) * 10.24, 1e-6);
}

// One transfer of three 4096 B packets (17 flits, 43.52 ns each), one read ahead. Packet 0 is read
// at 500 (done 700) and taken at once: tail at 702.56. Cutting it issues packet 1's read (500 ->
// 700), so packet 1 leaves at the link's rate: 702.56 + 43.52 = 746.08. Cutting packet 1 (at
// 702.56) issues packet 2's read, done at 902.56: its tail leaves at 905.12, reaches chip 1 at
// 1005.12, is written by 1305.12, and the transfer completes at 1805.12. Without read-ahead each
// packet's read starts when the output takes it: 702.56, 905.12, 1107.68 -> 2007.68.
TEST(Fabric, ReadAheadKeepsTheNextPacketOfATransferRead) {
  const auto topo = two_chips();
  auto p = params();
  p.read_ahead_packets = 1;
  FixedMemory m0(200, 300), m1(200, 300);
  Fabric f("fabric", topo, resolve::plan_fabric(p, topo), {&m0, &m1});
  TransferHandle h;
  sc_core::sc_spawn([&] { h = f.start({ChipId{0}, ChipId{1}, 3 * 4096, 0, 0, 0}); });
  sc_core::sc_start();
  ASSERT_TRUE(h.done());
  EXPECT_EQ(h.record().packets, 3u);
  EXPECT_NEAR(ns(h.record().completed), 1805.12, 1e-6);
  EXPECT_EQ(m0.calls, 3);
  EXPECT_EQ(m1.calls, 3);
}

TEST(Fabric, ReadAheadOutOfRangeIsConfigError) {
  const auto r = test::run_trnsim("bench ping --set rack.fabric.read_ahead_packets=-1", true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("read_ahead_packets"), std::string::npos) << r.out;
}

// Automatic buffer of a 100 GB/s, 100 ns link between chips (no traversal latency): the credit
// loop is 200 ns x 100 GB/s = 20000 B = 79 flits (rounded up); a 4096 B packet with its header is
// 17 flits, so the loop takes ceil(79 / 17) = 5 whole packets, plus 2: 7 x 17 = 119 flits. (The
// old loop + 2 packets, 79 + 34 = 113 flits, held only 6 whole packets.)
TEST(Fabric, AutomaticBufferIsTheCreditLoopInWholePacketsPlusTwo) {
  const auto topo = two_chips();
  Fabric f("fabric", topo, resolve::plan_fabric(params(), topo));
  for (int d = 0; d < 2; ++d) EXPECT_EQ(f.link(topo::LinkId{0}).direction(d).capacity(), 119u);
}

// A packet holds its credits at the receiver until its tail has left, so a fast link whose
// packets move at a slower link's rate needs more of them. Chip a (100 GB/s, 100 ns) and chip c
// (400 GB/s, 100 ns) on one switch (150 ns): every packet on the fast link moves at 100 GB/s,
// arriving from a or leaving towards a, so one packet leaves its receiver in 4 packet times of
// the fast link, and the buffer is the loop in whole packets plus 4 plus 1. s -> c (c traverses
// in 0): 400 GB/s x 200 ns = 313 flits -> 19 packets of 17 flits, + 5: 24 x 17 = 408. c -> s:
// 400 GB/s x 350 ns = 547 flits -> 33 packets, + 5: 38 x 17 = 646. The slow link's packets
// leave at its own rate: a -> s 100 GB/s x 350 ns = 137 flits -> 9 packets, + 2: 187; s -> a
// 79 flits -> 5 packets, + 2: 119 (as between two chips above).
TEST(Fabric, AutomaticBufferCoversPacketsMovingAtASlowerLinksRate) {
  topo::TopologySpec s;
  s.nodes = {node("a", topo::NodeKind::chip), node("c", topo::NodeKind::chip),
             node("s", topo::NodeKind::switch_, 2, Duration(150e-9))};
  s.links = {link("a", "s", 100, 100), link("s", "c", 400, 100)};
  const auto topo = build(s);
  Fabric f("fabric", topo, resolve::plan_fabric(params(), topo));
  const auto& slow = f.link(topo::LinkId{0});
  const auto& fast = f.link(topo::LinkId{1});
  EXPECT_EQ(slow.direction(0).capacity(), 187u);  // a -> s
  EXPECT_EQ(slow.direction(1).capacity(), 119u);  // s -> a
  EXPECT_EQ(fast.direction(0).capacity(), 408u);  // s -> c
  EXPECT_EQ(fast.direction(1).capacity(), 646u);  // c -> s
}

TEST(Fabric, TooFewVirtualChannelsIsConfigError) {
  const auto topo = torus4x4();
  auto p = params();
  p.vcs = 3;
  try {
    Fabric f("fabric", topo, resolve::plan_fabric(p, topo));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/rack/fabric/vcs"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at least 4"), std::string::npos) << e.what();
  }
}

TEST(Fabric, BufferSmallerThanAPacketIsConfigError) {
  const auto topo = two_chips();
  auto p = params();
  p.vc_buffer = Bytes(4096);  // a 4096 B packet needs 17 flits
  EXPECT_THROW(resolve::plan_fabric(p, topo), ConfigError);
}

TEST(Fabric, SelfTransferIsInputError) {
  const auto topo = two_chips();
  Fabric f("fabric", topo, resolve::plan_fabric(params(), topo));
  EXPECT_THROW(f.start({ChipId{1}, ChipId{1}, 64, 0, 0, 0}), InputError);
  EXPECT_THROW(f.start({ChipId{0}, ChipId{2}, 64, 0, 0, 0}), InputError);
}

// ---- the bench binary ---------------------------------------------------------------------------

using Run = trnsim::test::CliResult;
Run run(const std::string& args, bool stderr_too = true) {
  return trnsim::test::run_trnsim(args, stderr_too);
}

nlohmann::json without_host_figures(const std::string& text) {
  auto j = nlohmann::json::parse(text);
  j["run"].erase("wall_s");
  j["run"].erase("events_per_s");
  return j;
}

TEST(FabricBench, SameRunTwiceGivesIdenticalStatistics) {
  const std::string args = std::string("bench traffic --config ") + TRNSIM_SOURCE_DIR +
                           "/configs/racks/trn2-instance.json --pattern uniform --load 0.9 "
                           "--window 5us --warmup 2us --json";
  const auto a = run(args, false), b = run(args, false);
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  const auto ja = without_host_figures(a.out), jb = without_host_figures(b.out);
  EXPECT_EQ(ja, jb);
  EXPECT_GT(ja["messages_measured"].get<int>(), 0);
}

// sim.seed perturbs the arbitrary choices (equal-cost routes, arbitration tie-breaks, the order
// of simultaneous events). A 144-chip all-to-all contends at every switch: seeds 1 and 2 must
// finish at different times, and each seed twice at the same time. One 64 B ping at a time
// meets no other packet: whichever equal path or tie-break a seed picks, every latency is the same.
double all_to_all_ns(int seed) {
  const auto r = run(std::string("bench traffic --config ") + TRNSIM_SOURCE_DIR +
                         "/configs/racks/trn3-gen2-ultraserver.json --pattern all-to-all "
                         "--bytes 64KiB --json --set sim.seed=" + std::to_string(seed),
                     false);
  EXPECT_EQ(r.code, 0) << r.out;
  return nlohmann::json::parse(r.out)["completion_ns"].get<double>();
}

TEST(FabricBench, SeedChangesAContendedRun) {
  const double a = all_to_all_ns(1), b = all_to_all_ns(2);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, all_to_all_ns(1));
  // Both at least the injection bound: 143 x 64 KiB over 384 GB/s = 24.4 us.
  EXPECT_GT(std::min(a, b), 143.0 * 65536 / 384e9 * 1e9);
}

TEST(FabricBench, SeedLeavesAnUncontendedRunAlone) {
  auto ping = [](int seed) {
    const auto r = run(std::string("bench ping --config ") + TRNSIM_SOURCE_DIR +
                           "/configs/racks/trn3-gen2-ultraserver.json --json --set sim.seed=" +
                           std::to_string(seed),
                       false);
    EXPECT_EQ(r.code, 0) << r.out;
    auto j = without_host_figures(r.out);
    EXPECT_EQ(j["pairs"].get<int>(), 144 * 143);
    return j;
  };
  const auto a = ping(1);
  EXPECT_EQ(a, ping(2));
  EXPECT_EQ(a, ping(7));
}

TEST(FabricBench, BadArgumentsAreInputErrors) {
  const std::string cfg =
      std::string(" --config ") + TRNSIM_SOURCE_DIR + "/configs/racks/trn2-instance.json";
  for (const char* args :
       {"bench traffic --load 1.5", "bench traffic --load 0", "bench traffic --pattern ring",
        "bench traffic --pattern all-to-all --load 0.5", "bench traffic --pattern all-to-all "
        "--bytes 512", "bench traffic --pattern bisection --bytes 1GiB",
        "bench traffic --sweep --load 0.3", "bench traffic --window 0us",
        "bench ping --bytes lots"}) {
    const auto r = run(std::string(args) + cfg);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
  }
}

}  // namespace
}  // namespace trnsim::model
