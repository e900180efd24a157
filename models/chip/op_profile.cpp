// SPDX-License-Identifier: MIT
#include "chip/op_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "trnsim/error.hpp"
#include "trnsim/hash.hpp"

namespace trnsim::model {

int op_slices(const OpProfile& p) {
  const double bytes = std::max(p.read_bytes, p.write_bytes) / kOpPieces;
  return int(std::clamp<double>(std::ceil(bytes / double(kOpSliceBytes)), 1, kOpMaxSlices));
}

PieceBytes slice_bytes(const OpProfile& p, int i) {
  const auto n = std::uint64_t(kOpPieces * op_slices(p));
  const auto split = [i, n](double total) {
    const auto bytes = std::uint64_t(std::llround(total));
    const std::uint64_t each = (bytes + n - 1) / n;
    const std::uint64_t before = std::min(bytes, each * std::uint64_t(i));
    return std::min(each, bytes - before);
  };
  return {split(p.read_bytes), split(p.write_bytes)};
}

std::string op_key(const ComputeOp& op) {
  return std::visit(
      [](const auto& o) -> std::string {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          return fmt::format("gemm m={} k={} n={} batch={} {}", o.m, o.k, o.n, o.batch,
                             to_string(o.dtype));
        } else if constexpr (std::is_same_v<T, ElementOp>) {
          return fmt::format("{} elements={} inputs={} {}", to_string(o.kind), o.elements,
                             o.inputs, to_string(o.dtype));
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          return fmt::format("attention batch={} heads={} seq_q={} seq_kv={} head_dim={} {}",
                             o.batch, o.heads, o.seq_q, o.seq_kv, o.head_dim, to_string(o.dtype));
        } else {
          return fmt::format("memcpy bytes={}", o.bytes);
        }
      },
      op);
}

int grid_dims(const ComputeOp& op) {
  if (std::holds_alternative<ElementOp>(op)) return 1;
  if (std::holds_alternative<GemmOp>(op)) return 3;
  return 0;
}

std::string grid_key(const ComputeOp& op, int dim) {
  if (const auto* e = std::get_if<ElementOp>(&op)) {
    return fmt::format("{} inputs={} {}", to_string(e->kind), e->inputs, to_string(e->dtype));
  }
  if (const auto* g = std::get_if<GemmOp>(&op)) {
    const std::uint64_t d[3] = {g->m, g->k, g->n};
    static constexpr const char* names[3] = {"m", "k", "n"};
    const int a = (dim + 1) % 3, b = (dim + 2) % 3;
    return fmt::format("gemm over {}: {}={} {}={} batch={} {}", names[dim], names[a], d[a],
                       names[b], d[b], g->batch, to_string(g->dtype));
  }
  return "";
}

std::uint64_t grid_size(const ComputeOp& op, int dim) {
  if (const auto* e = std::get_if<ElementOp>(&op)) return e->elements;
  if (const auto* g = std::get_if<GemmOp>(&op)) return dim == 0 ? g->m : dim == 1 ? g->k : g->n;
  return 0;
}

ComputeOp with_grid_size(ComputeOp op, std::uint64_t size, int dim) {
  if (auto* e = std::get_if<ElementOp>(&op)) e->elements = size;
  if (auto* g = std::get_if<GemmOp>(&op)) (dim == 0 ? g->m : dim == 1 ? g->k : g->n) = size;
  return op;
}

namespace {

OpProfile interpolate(const OpProfile& a, const OpProfile& b, double w) {
  const auto mix = [w](double x, double y) { return x + (y - x) * w; };
  OpProfile p;
  p.time_ps = std::llround(mix(double(a.time_ps), double(b.time_ps)));
  p.cores_used = std::max(a.cores_used, b.cores_used);
  p.sbuf_bytes_per_partition = std::max(a.sbuf_bytes_per_partition, b.sbuf_bytes_per_partition);
  p.psum_banks = std::max(a.psum_banks, b.psum_banks);
  p.flops = mix(a.flops, b.flops);
  p.hbm_bytes = mix(a.hbm_bytes, b.hbm_bytes);
  p.instructions = std::uint64_t(std::llround(mix(double(a.instructions), double(b.instructions))));
  p.read_bytes = mix(a.read_bytes, b.read_bytes);
  p.write_bytes = mix(a.write_bytes, b.write_bytes);
  p.memory_ps = std::llround(mix(double(a.memory_ps), double(b.memory_ps)));
  for (std::size_t e = 0; e < p.engine_busy_s.size(); ++e) {
    p.engine_busy_s[e] = mix(a.engine_busy_s[e], b.engine_busy_s[e]);
  }
  for (const auto& [k, v] : a.actions) p.actions[k] = {};
  for (const auto& [k, v] : b.actions) p.actions[k] = {};
  for (auto& [k, v] : p.actions) {
    const auto ia = a.actions.find(k), ib = b.actions.find(k);
    const ActionMeter none{};
    const ActionMeter& ma = ia == a.actions.end() ? none : ia->second;
    const ActionMeter& mb = ib == b.actions.end() ? none : ib->second;
    v.quantity = mix(ma.quantity, mb.quantity);
    v.rated_j = mix(ma.rated_j, mb.rated_j);
  }
  return p;
}

}  // namespace

namespace {

// The profile of `op` at `size` on grid `pts`, interpolated into `scratch` when between points.
const OpProfile* on_grid(const std::vector<std::pair<std::uint64_t, OpProfile>>& pts,
                         std::uint64_t size, OpProfile& scratch) {
  const auto hi = std::lower_bound(pts.begin(), pts.end(), size,
                                   [](const auto& p, std::uint64_t x) { return p.first < x; });
  if (hi != pts.end() && hi->first == size) return &hi->second;
  if (hi == pts.begin() || pts.size() < 2) return nullptr;
  // Between two points; above the last (a size beyond the grid's calibrated cap), on the line
  // through the last point and the last at or below half its size: the tile model's time is a
  // step function of the size, so the slope between two neighbouring points can be a step's.
  const bool above = hi == pts.end();
  const auto top = above ? hi - 1 : hi;
  auto lo = top - 1;
  while (above && lo != pts.begin() && lo->first * 2 > top->first) --lo;
  const double w = (double(size) - double(lo->first)) / double(top->first - lo->first);
  scratch = interpolate(lo->second, top->second, w);
  return &scratch;
}

// `n` rounded up to a multiple of `unit`.
std::uint64_t round_up(std::uint64_t n, std::uint64_t unit) { return (n + unit - 1) / unit * unit; }

// The head's size along a dimension of `size`: `share` of it, at least `min`, rounded up to
// `unit`; `size` itself when that is half of it or more.
std::uint64_t head_size(std::uint64_t size, double share, std::uint64_t min, std::uint64_t unit) {
  const auto want = std::uint64_t(std::ceil(double(size) * share));
  const std::uint64_t h = round_up(std::max(want, min), unit);
  return h * 2 >= size ? size : h;
}

}  // namespace

ComputeOp op_head(const ComputeOp& op, double share, int cores) {
  if (!(share < 1) || cores < 1) return op;
  const auto c = std::uint64_t(cores);
  ComputeOp head = op;
  if (auto* g = std::get_if<GemmOp>(&head)) {
    if (g->batch >= 2 * c) {
      // Whole GEMMs per core: keep `share` of each core's instances, one at least.
      g->batch = head_size(g->batch, share, c, c);
    } else {
      std::uint64_t* side = &g->m;
      if (g->n > *side) side = &g->n;
      if (g->k > *side) side = &g->k;
      *side = head_size(*side, share, kHeadMinGemmSide, kHeadGemmUnit);
    }
  } else if (auto* e = std::get_if<ElementOp>(&head)) {
    e->elements = head_size(e->elements, share, kHeadMinElements, kHeadElementUnit);
  } else if (auto* a = std::get_if<AttentionOp>(&head)) {
    // Heads (of one batch instance when there are more than the cores), else batch instances.
    if (a->heads >= 2 * c) {
      a->heads = head_size(a->heads, share, c, c);
    } else if (a->batch >= 2 * c) {
      a->batch = head_size(a->batch, share, c, c);
    }
  } else if (auto* m = std::get_if<MemcpyOp>(&head)) {
    m->bytes = head_size(m->bytes, share, kHeadMinBytes, kHeadElementUnit);
  }
  return head;
}

OpFields op_fields(const ComputeOp& op) {
  OpFields f;
  f.v[0] = op.index();
  std::visit(
      [&f](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          f.v = {f.v[0], o.m, o.k, o.n, o.batch, std::uint64_t(o.dtype), 0};
        } else if constexpr (std::is_same_v<T, ElementOp>) {
          f.v = {f.v[0], std::uint64_t(o.kind), o.elements, std::uint64_t(o.inputs),
                 std::uint64_t(o.dtype), 0, 0};
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          f.v = {f.v[0], o.batch, o.heads, o.seq_q, o.seq_kv, o.head_dim, std::uint64_t(o.dtype)};
        } else {
          f.v = {f.v[0], o.bytes, 0, 0, 0, 0, 0};
        }
      },
      op);
  return f;
}

std::size_t OpFieldsHash::operator()(const OpFields& f) const {
  std::uint64_t h = 0;
  for (const std::uint64_t x : f.v) h = splitmix64_finalise(h ^ x) + 0x9e3779b97f4a7c15ULL;
  return std::size_t(h);
}

const OpProfile* ProfileAnswers::add(const OpFields& f, const OpProfile& p, bool interpolated) {
  const OpProfile* kept = &p;
  if (interpolated) {
    interpolated_.push_back(p);
    kept = &interpolated_.back();
  }
  by_op_.emplace(f, Answer{kept, interpolated});
  return kept;
}

namespace {

// find_profile() without remembering its answer.
const OpProfile* resolve_profile(const OpTable& t, const ComputeOp& op, OpProfile& scratch) {
  if (auto it = t.exact.find(op_key(op)); it != t.exact.end()) return &it->second;
  // The first of the op's grids (m, k, n for a GEMM) that the table has.
  const std::vector<std::pair<std::uint64_t, OpProfile>>* found = nullptr;
  std::uint64_t size = 0;
  for (int dim = 0; dim < grid_dims(op) && !found; ++dim) {
    const auto g = t.grids.find(grid_key(op, dim));
    if (g == t.grids.end() || g->second.empty()) continue;
    found = &g->second;
    size = grid_size(op, dim);
  }
  if (!found) return nullptr;
  const OpProfile* p = on_grid(*found, size, scratch);
  // A GEMM runs whole tiles of kGemmTile along each dimension: its time is that of the size
  // rounded up to one (a 2,100-row GEMM takes 17 row tiles, as a 2,176-row one does), its work
  // and traffic those of its own size.
  const std::uint64_t tiles = (size + kGemmTile - 1) / kGemmTile * kGemmTile;
  if (!p || !std::holds_alternative<GemmOp>(op) || tiles == size) return p;
  OpProfile at_tiles;
  const OpProfile* q = on_grid(*found, tiles, at_tiles);
  if (!q) return p;
  OpProfile timed = *q;
  timed.flops = p->flops;
  timed.hbm_bytes = p->hbm_bytes;
  timed.read_bytes = p->read_bytes;
  timed.write_bytes = p->write_bytes;
  timed.actions = p->actions;
  scratch = std::move(timed);
  return &scratch;
}

}  // namespace

const OpProfile* find_profile(const OpTable& t, const ComputeOp& op, OpProfile& scratch,
                              bool* interpolated) {
  const OpFields f = op_fields(op);
  if (const auto known = t.answers.find(f); known.profile) {
    if (interpolated) *interpolated = known.interpolated;
    return known.profile;
  }
  const OpProfile* p = resolve_profile(t, op, scratch);
  if (!p) return nullptr;
  if (interpolated) *interpolated = p == &scratch;
  return t.answers.add(f, *p, p == &scratch);
}

const OpProfile& profile_of(const OpTable* t, const ComputeOp& op, OpProfile& scratch,
                            const std::string& who, const std::string& name, bool* interpolated) {
  const OpProfile* p = t ? find_profile(*t, op, scratch, interpolated) : nullptr;
  if (!p) {
    throw InternalError(
        fmt::format("{}: op '{}' ({}) has no calibrated profile", who, name, op_key(op)));
  }
  return *p;
}

}  // namespace trnsim::model
