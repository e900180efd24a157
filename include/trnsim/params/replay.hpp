// SPDX-License-Identifier: MIT
// Parameters of workload replay: how collectives are executed and how ranks map to chips.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trnsim/params/describe.hpp"
#include "trnsim/units.hpp"

namespace trnsim::config {

// ring: one ring, on a one-hop cycle of the topology where there is one; bidir_ring: that ring
// both ways; multi_ring: every edge-disjoint one-hop Hamiltonian cycle found, each both ways (all
// links of a chip at once); torus: dimension-ordered bidirectional rings (X, then Y, then Z);
// hierarchical: within each local group, across the groups, within again (servers of a switched
// rack). docs/models/collectives.md.
enum class CollectiveAlgorithm { auto_, ring, bidir_ring, multi_ring, torus, rdh, mesh, hierarchical };
constexpr auto enum_names(CollectiveAlgorithm) {
  using A = CollectiveAlgorithm;
  using S = std::string_view;
  return std::array{std::pair{A::auto_, S("auto")},
                    std::pair{A::ring, S("ring")},
                    std::pair{A::bidir_ring, S("bidir_ring")},
                    std::pair{A::multi_ring, S("multi_ring")},
                    std::pair{A::torus, S("torus")},
                    std::pair{A::rdh, S("rdh")},
                    std::pair{A::mesh, S("mesh")},
                    std::pair{A::hierarchical, S("hierarchical")}};
}

struct CollectiveParams {
  // "auto" picks by size: mesh below mesh_max_bytes, recursive halving-doubling below
  // rdh_max_bytes (power-of-two groups), above it the topology's large-message algorithm
  // (multi_ring on a torus, as KangaRing's two Hamiltonian cycles; hierarchical on a switched
  // rack with whole servers; ring otherwise). The thresholds are the Neuron runtime's published
  // Trn2 intra-node sweet spots ("Mesh < 1 MB, RDH 1-56 MB, KangaRing > 56 MB", Neuron runtime,
  // Intra-node Collective Communications, ../shared/specs/trainium.md V2); Neuron publishes
  // none for the NeuronSwitch racks, so the same ones apply there.
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::auto_;
  Bytes mesh_max_bytes = Bytes(1e6);
  Bytes rdh_max_bytes = Bytes(56e6);
  // Ranks per local level of the hierarchical algorithm (consecutive members of the group); 0:
  // the members on one chip when several share one, else the chips of one server (two_level),
  // leaf (folded_clos) or 2D plane (torus).
  int hierarchical_local_size = 0;
  // Every transfer of a collective step is split into pieces of at most this size: pieces
  // interleave with concurrent collectives on the fabric, and each received piece is reduced as
  // soon as it arrives (the reduction pipelines with the transfer of the next piece).
  Bytes chunk_bytes = Bytes(1048576);
  // Runtime costs (docs/models/collectives.md#runtime-costs). Launch: once per collective and
  // member, the cross-engine semaphore-to-DMA-start latency of ~1,300 ns (NKI DMA bandwidth
  // guide, ../shared/specs/trainium.md section 2). Descriptor generation: before the DMAs of
  // every data step, ~600 ns per DGE DMA instruction (NKI Trainium2 guide, nki-dge). Sync: before
  // every data step each receiver writes a semaphore of sync_bytes to each of its senders over
  // the network (the 4 B semaphore of the DMA overview's measurement), and a sender starts only
  // when its receivers are ready; 0 turns the handshake off.
  Duration launch_latency = Duration(1.3e-6);
  Duration descriptor_time = Duration(600e-9);
  Bytes sync_bytes = Bytes(4);
  // Reductions run on the DMA engines (the DMA engine's reduction capability, NKI
  // nki.isa.sendrecv_compute), not as Vector-engine ops. The DMA engines of this many
  // NeuronCores (0: every core of the chip) serve the chip's collective reductions and on-chip
  // copies (ranks on one chip) one after another, at their summed /chip/core/dma bandwidth of
  // bytes read; a reduction reads two operands and writes one through the chip's memory, a copy
  // reads and writes once. The DMA engines of the cores' own ops are not taken from them.
  int collective_dma_cores = 0;
  template <class V>
  void visit(V& v) {
    v.field("algorithm", algorithm, "collective algorithm, or auto to choose by size and shape");
    v.field("mesh_max_bytes", mesh_max_bytes, "auto: largest size that uses the mesh algorithm");
    v.field("rdh_max_bytes", rdh_max_bytes,
            "auto: largest size that uses recursive halving-doubling");
    v.field("hierarchical_local_size", hierarchical_local_size,
            "members per local level of the hierarchical algorithm (0: from the placement and "
            "topology)",
            AtLeast{0});
    v.field("chunk_bytes", chunk_bytes,
            "largest single transfer of a collective step (reductions pipeline per piece)",
            Positive{});
    v.field("launch_latency", launch_latency, "runtime cost of launching a collective, per member",
            AtLeast{0});
    v.field("descriptor_time", descriptor_time,
            "descriptor generation before the DMAs of each collective step", AtLeast{0});
    v.field("sync_bytes", sync_bytes,
            "semaphore each receiver writes to its senders before a step (0: no handshake)",
            AtLeast{0});
    v.field("collective_dma_cores", collective_dma_cores,
            "NeuronCores whose DMA engines run a chip's collective reductions and on-chip copies "
            "(0: all)",
            InRange{0, 256});
  }
};

// Where ranks run. chip: rank r on chip r. logical_core: a rank per logical NeuronCore, cores/lnc
// consecutive ranks per chip (LNC=2: 4 per Trainium chip, LNC=1: 8; Logical NeuronCore
// configuration, ../shared/specs/trainium.md section 2). block: ranks_per_chip consecutive ranks
// per chip. file: placement_file, a JSON object {"chips": [chip of rank 0, chip of rank 1, ...]}.
enum class RankPlacement { chip, logical_core, block, file };
constexpr auto enum_names(RankPlacement) {
  using P = RankPlacement;
  using S = std::string_view;
  return std::array{std::pair{P::chip, S("chip")}, std::pair{P::logical_core, S("logical_core")},
                    std::pair{P::block, S("block")}, std::pair{P::file, S("file")}};
}

// A placement file: the chip of each rank.
struct PlacementFileParams {
  std::vector<int> chips;
  template <class V>
  void visit(V& v) {
    v.field("chips", chips, "the chip of each rank, rank 0 first", Required{}, AtLeast{0});
  }
};

struct ReplayParams {
  CollectiveParams collectives{};
  RankPlacement placement = RankPlacement::chip;
  int lnc = 2;
  int ranks_per_chip = 1;
  std::string placement_file;
  // Memory model of the chips in a whole-rack replay, a registry name (role memory). The detailed
  // HBM model (banks, rows, refresh) costs one calculation per 256 B of traffic, which for 144
  // chips moving tens of GB each is minutes of wall time; the bandwidth model (one Timeline per
  // stack at its share of the chip's bandwidth, plus the fixed access latency) keeps whole-rack
  // runs to seconds. docs/models/chip.md gives the error of the bandwidth model on single-chip
  // GEMMs.
  std::string chip_memory = "bandwidth";
  // DMA granularity of every chip in a replay (replaces /chip/core/dma/engines, engine_bandwidth,
  // packet_bytes and outstanding_packets there). A DMA engine runs once per half window and once
  // per share of an instruction, so events scale with engines per instruction and with the bytes
  // each keeps in flight; timing depends on the core's DMA bandwidth and bytes in flight, hardly on
  // how they are divided (docs/models/chip.md#replay-granularity). Default: the core's 16 engines
  // as 4 of 4x the bandwidth, each with 128 KiB x 2 in flight (1 MiB per core, as 16 x 64 KiB).
  // Compute ops a chip runs at once, 0 = no limit (collective reductions run on the DMA engines,
  // /replay/collectives/collective_dma_cores): only SBUF and
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
    v.field("placement", placement,
            "where ranks run: chip (one per chip), logical_core (cores/lnc per chip), block "
            "(ranks_per_chip per chip) or file (placement_file)");
    v.field("lnc", lnc, "logical NeuronCore size for placement logical_core", InRange{1, 2});
    v.field("ranks_per_chip", ranks_per_chip, "consecutive ranks per chip for placement block",
            InRange{1, 4096});
    v.field("placement_file", placement_file,
            "placement file for placement file: {\"chips\": [chip of each rank]}");
    v.field("chip_memory", chip_memory,
            "memory model of each chip in a replay (registry role memory, `trnsim list-types`): "
            "hbm (banks, rows, refresh) or bandwidth (per-stack bandwidth and fixed latency; "
            "fast)");
    v.field("chip_op_slots", chip_op_slots,
            "compute ops a chip runs at once in a replay, 0 = no limit; "
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
