// SPDX-License-Identifier: MIT
// Parameters of workload replay: how collectives are executed and how ranks map to chips.
#pragma once

#include <array>
#include <string_view>
#include <utility>

#include "trnsim/config/schema.hpp"
#include "trnsim/units.hpp"

namespace trnsim::config {

enum class CollectiveAlgorithm { auto_, ring, bidir_ring, rdh, mesh, hierarchical };
constexpr auto enum_names(CollectiveAlgorithm) {
  using A = CollectiveAlgorithm;
  using S = std::string_view;
  return std::array{std::pair{A::auto_, S("auto")},        std::pair{A::ring, S("ring")},
                    std::pair{A::bidir_ring, S("bidir_ring")}, std::pair{A::rdh, S("rdh")},
                    std::pair{A::mesh, S("mesh")},
                    std::pair{A::hierarchical, S("hierarchical")}};
}

struct CollectiveParams {
  // "auto" picks by size: mesh below mesh_max_bytes, recursive halving-doubling below
  // rdh_max_bytes (power-of-two groups; ring otherwise), ring above. The thresholds are the Neuron
  // runtime's published sweet spots on Trn2 (trainium.md V2: Mesh < 1 MB, RDH 1-56 MB).
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::auto_;
  Bytes mesh_max_bytes = Bytes(1e6);
  Bytes rdh_max_bytes = Bytes(56e6);
  // Ranks per first level of the hierarchical algorithm (consecutive ranks of the group); 0 means
  // the chips of one server (two_level), one leaf (folded_clos) or one 2D plane (torus).
  int hierarchical_local_size = 0;
  // Transfers larger than this are split so concurrent collectives interleave on the fabric.
  Bytes chunk_bytes = Bytes(1048576);
  template <class V>
  void visit(V& v) {
    v.field("algorithm", algorithm, "collective algorithm, or auto to choose by size");
    v.field("mesh_max_bytes", mesh_max_bytes, "auto: largest size that uses the mesh algorithm");
    v.field("rdh_max_bytes", rdh_max_bytes,
            "auto: largest size that uses recursive halving-doubling");
    v.field("hierarchical_local_size", hierarchical_local_size,
            "ranks per local level of the hierarchical algorithm (0: from the topology)",
            AtLeast{0});
    v.field("chunk_bytes", chunk_bytes, "largest single transfer of a collective step",
            Positive{});
  }
};

// Memory model of the chips in a whole-rack replay. The detailed HBM model (banks, rows,
// refresh) costs one calculation per 256 B of traffic, which for 144 chips moving tens of GB
// each is minutes of wall time; the bandwidth model (one Timeline per stack at its share of the
// chip's bandwidth, plus the fixed access latency) keeps whole-rack runs to seconds.
// docs/models/chip.md gives the error of the bandwidth model on single-chip GEMMs.
enum class ChipMemoryModel { hbm, bandwidth };
constexpr auto enum_names(ChipMemoryModel) {
  using M = ChipMemoryModel;
  using S = std::string_view;
  return std::array{std::pair{M::hbm, S("hbm")}, std::pair{M::bandwidth, S("bandwidth")}};
}

struct ReplayParams {
  CollectiveParams collectives{};
  ChipMemoryModel chip_memory = ChipMemoryModel::bandwidth;
  // DMA granularity of every chip in a replay (replaces /chip/core/dma/engines, engine_bandwidth,
  // packet_bytes and outstanding_packets there). A DMA engine runs once per half window and once
  // per share of an instruction, so events scale with engines per instruction and with the bytes
  // each keeps in flight; timing depends on the core's DMA bandwidth and bytes in flight, hardly on
  // how they are divided (docs/models/chip.md#replay-granularity). Default: the core's 16 engines
  // as 4 of 4x the bandwidth, each with 128 KiB x 2 in flight (1 MiB per core, as 16 x 64 KiB).
  // Ops a chip runs at once (compute ops and collective reductions), 0 = no limit: only SBUF and
  // PSUM capacity limit them. More wait in the order they were issued. Every running op holds its
  // lowered program (~36 MB for a 10240^3 GEMM): a bound for traces with many independent large
  // ops. A bound changes timing (4 on the bundled DeepSeek-V3 step: +7.6 % step time).
  int chip_op_slots = 0;
  int dma_engines = 4;
  Bytes dma_packet_bytes = Bytes(131072);
  int dma_outstanding_packets = 2;
  // Fabric packet size in a replay (replaces /rack/fabric/packet_bytes there). A training step
  // moves hundreds of GB across a 144-chip rack (gradient reduce-scatter/all-gather of the expert
  // weights dominates); 256 KiB packets keep that to a few million packet-hops. docs/models/
  // fabric.md measures what larger packets change in an all-to-all.
  Bytes fabric_packet_bytes = Bytes(262144);
  template <class V>
  void visit(V& v) {
    v.field("collectives", collectives, "collective algorithms");
    v.field("chip_memory", chip_memory,
            "memory model of each chip in a replay: hbm (banks, rows, refresh) or bandwidth "
            "(per-stack bandwidth and fixed latency; fast)");
    v.field("chip_op_slots", chip_op_slots,
            "ops (compute, collective reductions) a chip runs at once in a replay, 0 = no limit; "
            "more wait in issue order",
            AtLeast{0});
    v.field("dma_engines", dma_engines,
            "DMA engines per core in a replay: the core's engines merged into this many, each with "
            "their summed bandwidth (event granularity)",
            InRange{1, 4096});
    v.field("dma_packet_bytes", dma_packet_bytes,
            "DMA round-robin unit of the chips in a replay (event granularity)", Positive{});
    v.field("dma_outstanding_packets", dma_outstanding_packets,
            "packets each DMA engine keeps in flight in a replay (event granularity)",
            InRange{1, 65536});
    v.field("fabric_packet_bytes", fabric_packet_bytes,
            "fabric packet size in a replay (event granularity)", Positive{});
  }
};

}  // namespace trnsim::config
