// SPDX-License-Identifier: MIT
// What the op-level compute model (op_chip.hpp) knows of an op: its profile, measured once on the
// tile model (model::Chip) for each distinct (op kind, shape, dtype) of a run, on a chip of the
// run's resolved plan (src/run/calibrate.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "chip/compute_op.hpp"
#include "common/power.hpp"

namespace trnsim::model {

// Pieces an occurrence is replayed as: equal parts of its isolated time, each reserving its
// share of the op's engine busy time and issuing 1/kOpPieces of its HBM reads and writes. Fewer,
// longer pieces are closer to the tile model's FIFO engine queues (docs/models/fidelity.md
// measures 2, 4 and 8 on a step).
inline constexpr int kOpPieces = 2;

struct OpProfile {
  std::int64_t time_ps = 0;  // isolated duration on the tile model
  int cores_used = 0;        // cores 0 .. cores_used-1 (the lowering fills cores from 0)
  double flops = 0, hbm_bytes = 0;  // as model::OpStats counts them
  std::uint64_t instructions = 0;
  double read_bytes = 0, write_bytes = 0;  // at the chip's memory port
  // The isolated time of one slice's memory requests (slice_bytes(0)) on an idle memory of the
  // same plan: the part of a slice's memory time that is not contention.
  std::int64_t memory_ps = 0;
  // The largest SBUF (bytes per partition) and PSUM (banks) footprint of its programs on one
  // core, held on each core it uses from its start to its end, as the tile model's programs do.
  std::uint64_t sbuf_bytes_per_partition = 0;
  int psum_banks = 0;
  std::array<double, 4> engine_busy_s{};  // tensor, vector, scalar, gpsimd, summed over cores
  // What the op's blocks counted, except the memory's own: quantity and rated energy by action
  // (per_unit_j unused). The op-level model's meters replay them (ActionMeter::count_priced).
  std::map<Action, ActionMeter> actions;
};

// A piece's HBM traffic is issued as slices spread evenly over the piece, so that a transfer
// through the same memory waits behind one slice rather than the whole op (the tile model's DMA
// queues hold about a MiB per core): ceil(bytes / kOpSliceBytes) slices per piece, at most
// kOpMaxSlices. Events per op: kOpPieces * slices.
inline constexpr std::uint64_t kOpSliceBytes = 4ULL << 20;
inline constexpr int kOpMaxSlices = 16;
int op_slices(const OpProfile& p);  // per piece

// The requests of slice `i` (of kOpPieces * op_slices()): ceil(bytes / slices) of reads and of
// writes (the last slices the rest), each one request at an address aligned to a whole interleave
// round, so that every slice splits over the stacks the way the calibration probe's did.
struct PieceBytes {
  std::uint64_t read = 0, write = 0;
};
PieceBytes slice_bytes(const OpProfile& p, int i);

// The calibrated profiles of one chip plan: exact shapes, and grids of sizes (element counts,
// GEMM rows) for ops of one kind whose sizes vary too much to calibrate each (MoE expert GEMMs,
// whose rows follow the routing).
// A ComputeOp as a value to hash: its alternative, then every field op_key() prints.
struct OpFields {
  std::array<std::uint64_t, 7> v{};
  bool operator==(const OpFields&) const = default;
};
OpFields op_fields(const ComputeOp& op);
struct OpFieldsHash {
  std::size_t operator()(const OpFields& f) const;
};

// find_profile()'s answers so far: every occurrence of an op resolves alike, and formatting its
// key, looking it up by string and interpolating its grid at each occurrence showed in profiles
// of rack runs. An answer points into the table (exact, grids) or at an interpolated profile kept
// here. A copy of a table starts with no answers (they point into the original).
class ProfileAnswers {
 public:
  ProfileAnswers() = default;
  ProfileAnswers(const ProfileAnswers&) {}
  ProfileAnswers& operator=(const ProfileAnswers&) {
    clear();
    return *this;
  }
  struct Answer {
    const OpProfile* profile = nullptr;
    bool interpolated = false;  // not in the table: interpolated on a grid
  };
  Answer find(const OpFields& f) const {
    const auto it = by_op_.find(f);
    return it == by_op_.end() ? Answer{} : it->second;
  }
  // Files `p`, the answer for `f`; an interpolated one (in a caller's scratch) is copied first.
  // Returns the filed answer.
  const OpProfile* add(const OpFields& f, const OpProfile& p, bool interpolated);
  void clear() {
    by_op_.clear();
    interpolated_.clear();
  }

 private:
  std::unordered_map<OpFields, Answer, OpFieldsHash> by_op_;
  std::deque<OpProfile> interpolated_;
};

struct OpTable {
  std::map<std::string, OpProfile> exact;  // by op_key()
  // By grid_key(): profiles at increasing sizes; an op between two points is interpolated
  // linearly in its size, above the last on the line through the last and the last at or below
  // half its size.
  std::map<std::string, std::vector<std::pair<std::uint64_t, OpProfile>>> grids;
  double static_power_w = 0;  // of the tile chip without its memory
  int shapes_simulated = 0;   // exact shapes plus grid points
  // Filled by find_profile(): entries added to `exact` or `grids` after a lookup must not change
  // an answer already given (they may add others; answers() .clear() forgets them all).
  mutable ProfileAnswers answers;
};

// "gemm m=.. k=.. n=.. batch=.. bf16" and so on: equal keys, equal lowering.
std::string op_key(const ComputeOp& op);
// Size grids: an element-wise op has one (its element count), a GEMM three (m, k or n varying,
// the other two fixed: expert GEMMs vary in m, their weight gradients in k). grid_key() is the op
// without the size along `dim`, grid_size() that size, with_grid_size() the op at another.
int grid_dims(const ComputeOp& op);
std::string grid_key(const ComputeOp& op, int dim = 0);
std::uint64_t grid_size(const ComputeOp& op, int dim = 0);
ComputeOp with_grid_size(ComputeOp op, std::uint64_t size, int dim = 0);
// Op heads (fast-forward inside an op, tile tier): the part of `op` a tile chip simulates
// before it times the rest from the calibrated profiles of the op and of its head
// (model::Chip::execute). The work of an op repeats (a GEMM's batch instances, or its rows,
// columns or contraction in tiles; an attention's heads; an element-wise op's elements): the head
// keeps `share` of it along the dimension that repeats most, rounded up to whole repetitions and
// to no less than kHeadMin* (a head must reach the op's steady state: both of its operands in
// flight, every core busy). `op` itself when the head would be half of it or more (it is
// simulated whole) or `share` >= 1.
inline constexpr std::uint64_t kHeadMinGemmSide = 2048;      // rows, columns or contraction
inline constexpr std::uint64_t kHeadGemmUnit = 512;          // ... rounded up to this
inline constexpr std::uint64_t kHeadMinElements = 1ULL << 22;  // 8 MiB of BF16
inline constexpr std::uint64_t kHeadElementUnit = 1ULL << 16;
inline constexpr std::uint64_t kHeadMinBytes = 8ULL << 20;   // memcpy
ComputeOp op_head(const ComputeOp& op, double share, int cores);
// GEMM tiles along each dimension on a size grid: the 128 partitions.
inline constexpr std::uint64_t kGemmTile = 128;
// The profile of `op` in `t`: the exact one, else interpolated on the first of its grids the
// table has (a GEMM timed at its size rounded up to whole kGemmTile tiles, its FLOPs, bytes and
// energy at its own size); null when none covers it. Answers are remembered (OpTable::answers):
// the pointer stays valid as long as the table, and `scratch` may be reused at once.
// `interpolated`, when given, tells whether the profile was interpolated on a grid.
const OpProfile* find_profile(const OpTable& t, const ComputeOp& op, OpProfile& scratch,
                              bool* interpolated = nullptr);
// find_profile(), or InternalError naming the chip `who` and the op (the run calibrates every op
// of its trace); a null table is the same error.
const OpProfile& profile_of(const OpTable* t, const ComputeOp& op, OpProfile& scratch,
                            const std::string& who, const std::string& name,
                            bool* interpolated = nullptr);

}  // namespace trnsim::model
