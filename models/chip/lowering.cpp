// SPDX-License-Identifier: MIT
#include "chip/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "trnsim/error.hpp"

namespace trnsim::model {

namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

constexpr int kOutSlots = 4;                     // staging buffers of evicted C tiles
constexpr double kMinBlockBytes = 1024.0 * 1024;  // aim for B-block DMAs of at least this
constexpr int kQueueA = 0, kQueueB = 1, kQueueStore = 2;

Instr dma(std::uint64_t bytes, std::uint64_t addr, DmaEndpoint src, DmaEndpoint dst, int queue,
          int engines) {
  Instr in;
  in.kind = Instr::Kind::dma;
  in.bytes = bytes;
  in.addr = addr;
  in.src = src;
  in.dst = dst;
  in.queue = std::uint16_t(queue);
  in.engines = std::uint16_t(engines);
  return in;
}

Instr element(std::uint64_t elements, int inputs, bool wide) {
  Instr in;
  in.kind = Instr::Kind::element;
  in.elements = elements;
  in.inputs = std::uint32_t(inputs);
  in.wide = wide;
  return in;
}

}  // namespace

const char* to_string(ElementKind k) {
  switch (k) {
    case ElementKind::elementwise: return "elementwise";
    case ElementKind::activation: return "activation";
    case ElementKind::reduction: return "reduction";
    case ElementKind::softmax: return "softmax";
    case ElementKind::norm: return "norm";
  }
  return "?";
}

std::uint64_t HbmAllocator::alloc(std::uint64_t bytes) {
  constexpr std::uint64_t align = 4096;
  bytes = ceil_div(std::max<std::uint64_t>(bytes, 1), align) * align;
  if (capacity > 0 && next + bytes > capacity) next = 0;  // wrap: addresses, not contents
  const std::uint64_t a = next;
  next += bytes;
  return a;
}

// ------------------------------------------------------------------------------------------ GEMM

GemmPlan plan_gemm(std::uint64_t m, std::uint64_t k, std::uint64_t n, std::uint64_t batches,
                   Dtype dtype, const config::ChipParams& chip, const std::string& op) {
  const auto& core = chip.core;
  const double rate = macs_per_pe_cycle(core.tensor.macs_per_pe_cycle, dtype);
  if (rate <= 0) {
    throw InputError(fmt::format(
        "op '{}': {} does not support {} (/chip/core/tensor/macs_per_pe_cycle/{} is 0)", op,
        chip.name, to_string(dtype), to_string(dtype)));
  }
  GemmPlan p;
  const auto kf = std::uint64_t(std::max(1.0, std::floor(rate)));
  p.tk = std::uint64_t(core.tensor.rows) * kf;
  p.tm = std::uint64_t(core.tensor.cols);
  const auto bank_fp32 = std::uint64_t(core.psum.bytes_per_partition.si) /
                         std::uint64_t(core.psum.banks) / 4;
  p.tn = std::min<std::uint64_t>(std::uint64_t(core.tensor.moving_free_max), bank_fp32);
  if (p.tn == 0) {
    throw InternalError(fmt::format("op '{}': a PSUM bank holds no FP32 element (the resolve "
                                    "step checks /chip/core/psum/bytes_per_partition)", op));
  }
  const double elem = dtype_bytes(dtype);
  const double out_elem = dtype == Dtype::fp32 ? 4 : 2;
  const std::uint64_t mt = ceil_div(m, p.tm), nt = ceil_div(n, p.tn), kt = ceil_div(k, p.tk);
  const double a_tile = double(kf * p.tm) * elem;  // bytes per partition of one A tile
  const double b_tile = double(kf * p.tn) * elem;
  const double staging = kOutSlots * double(p.tn) * out_elem;
  const double cap = core.sbuf.bytes_per_partition.si;
  const double a_bytes = double(m) * double(k) * elem, b_bytes = double(k) * double(n) * elem;
  const double c_bytes = double(batches) * double(m) * double(n) * out_elem;

  // Whole K resident: one operand stays in SBUF in blocks as large as fit (single-buffered when
  // one block holds all of it and there is no next batch), the other streams through two slots
  // in DMAs of at least kMinBlockBytes. Each operand is tried as the resident one; the plan that
  // reads less from HBM wins (ties keep A resident).
  struct Side {
    std::uint64_t tiles;    // tiles of the operand along M (A) or N (B)
    double tile;            // bytes per partition of one K tile of one such tile
    double row_bytes;       // HBM bytes of one tile-row/column over the whole K
    double total;           // HBM bytes of the operand, one batch
  };
  const Side sa{mt, a_tile, double(p.tm) * double(k) * elem, a_bytes};
  const Side sb{nt, b_tile, double(p.tn) * double(k) * elem, b_bytes};
  bool found = false;
  double best_traffic = 0;
  for (const bool a_res : {true, false}) {
    const Side& res = a_res ? sa : sb;
    const Side& str = a_res ? sb : sa;
    const auto sb_want = std::min<std::uint64_t>(
        str.tiles, std::max<std::uint64_t>(1, std::uint64_t(std::ceil(kMinBlockBytes / str.row_bytes))));
    for (std::uint64_t s : {sb_want, std::uint64_t(1)}) {
      bool fits = false;
      // The largest block of resident tiles that fits: all of them (single-buffered with one
      // batch), else the largest r < tiles double-buffered. Bytes grow with r, so r is found by
      // division (a scan from the top took ~10^17 steps for m = 2^64 - 1), then corrected by
      // the same comparison a scan makes.
      const auto bytes_of = [&](std::uint64_t r) {
        const int bufs = (r == res.tiles && batches == 1) ? 1 : 2;
        return bufs * double(r * kt) * res.tile + 2 * double(s * kt) * str.tile + staging;
      };
      std::uint64_t first = res.tiles;
      if (bytes_of(first) > cap) {
        const double room = (cap - 2 * double(s * kt) * str.tile - staging) / (2 * double(kt) * res.tile);
        first = room < 1 ? 0 : std::min<std::uint64_t>(res.tiles - 1, std::uint64_t(std::min(room, 1.8e19)));
        while (first + 1 < res.tiles && bytes_of(first + 1) <= cap) ++first;
        while (first >= 1 && bytes_of(first) > cap) --first;
      }
      for (std::uint64_t r = first; r >= 1; --r) {
        const int bufs = (r == res.tiles && batches == 1) ? 1 : 2;
        const double bytes = bytes_of(r);
        if (bytes > cap) continue;
        const double traffic =
            double(batches) * (res.total + str.total * double(ceil_div(res.tiles, r))) + c_bytes;
        if (!found || traffic < best_traffic) {
          found = true;
          best_traffic = traffic;
          p.mb = a_res ? r : s;
          p.nb = a_res ? s : r;
          p.kb = kt;
          p.full_k = true;
          p.a_resident = a_res;
          p.resident_buffers = bufs;
          p.sbuf_bytes_per_partition = std::uint64_t(std::ceil(bytes));
          p.psum_banks = core.psum.banks;
          p.hbm_bytes = traffic;
        }
        fits = true;
        break;
      }
      if (fits) break;
    }
  }
  // K blocked: Mb * Nb <= banks tiles accumulate in PSUM at once and both operands reload for
  // every K block, A once per Nb columns, B once per Mb rows. Every split of the banks into
  // Mb x Nb is tried with K blocks as large as fit; it replaces a whole-K plan only if it reads
  // less.
  const auto banks = std::uint64_t(core.psum.banks);
  for (std::uint64_t mb = 1; mb <= std::min(mt, banks); mb *= 2) {
    const std::uint64_t nb = std::min<std::uint64_t>(nt, std::max<std::uint64_t>(1, banks / mb));
    const double per_k = 2 * double(mb) * a_tile + 2 * double(nb) * b_tile;
    if (cap - staging < per_k) continue;
    // K blocks of equal size: a short last block could not hide the next block's loads.
    const auto kb_max = std::min<std::uint64_t>(kt, std::uint64_t((cap - staging) / per_k));
    const std::uint64_t kb = ceil_div(kt, ceil_div(kt, kb_max));
    const double traffic = double(batches) * (a_bytes * double(ceil_div(nt, nb)) +
                                              b_bytes * double(ceil_div(mt, mb))) + c_bytes;
    if (found && traffic >= best_traffic) continue;
    found = true;
    best_traffic = traffic;
    p.mb = mb;
    p.nb = nb;
    p.kb = kb;
    p.full_k = false;
    p.a_resident = true;
    p.resident_buffers = 2;
    p.sbuf_bytes_per_partition = std::uint64_t(std::ceil(per_k * double(kb) + staging));
    p.psum_banks = int(mb * nb);
    p.hbm_bytes = traffic;
  }
  if (found) return p;
  throw WorkloadError(fmt::format(
      "op '{}': GEMM {}x{}x{} {} cannot be tiled into SBUF: one 128-row A tile, one B tile "
      "(double-buffered) and {} output tiles need {:.0f} bytes per partition, the core has "
      "{:.0f} (/chip/core/sbuf/bytes_per_partition)",
      op, m, k, n, to_string(dtype), kOutSlots, 2 * a_tile + 2 * b_tile + staging, cap));
}

namespace {

// One operand's SBUF slots: loads signal `loaded` (once per DMA), the last matmul of a block
// signals `free`. `loads` counts DMAs into each slot, `blocks` the blocks placed in it.
struct OperandSlots {
  std::array<Semaphore*, 2> loaded{}, free{};
  std::array<std::uint64_t, 2> loads{}, blocks{};
  int next = 0;      // slot of the next block
  int buffers = 2;   // 1: a single slot
  bool per_tile = false;  // one DMA per tile (resident operand) or one per block (streamed)
  int cur = -1;           // slot of the block in use
  std::uint64_t cur_base = 0;  // loads into `cur` before the block in use

  explicit OperandSlots(Program& prog) {
    for (int i = 0; i < 2; ++i) {
      loaded[std::size_t(i)] = prog.new_semaphore();
      free[std::size_t(i)] = prog.new_semaphore();
    }
  }
  // Starts a block in the next slot; its DMAs wait until the slot's previous block is released.
  std::uint64_t begin_block() {
    cur = next;
    if (buffers == 2) next ^= 1;
    cur_base = loads[std::size_t(cur)];
    return blocks[std::size_t(cur)]++;
  }
  // Semaphore count at which tile `t` of the block in use is in SBUF.
  std::uint64_t ready(std::uint64_t t) const { return cur_base + (per_tile ? t + 1 : 1); }
};

// What lower_gemm_core() appends for `batches` GEMMs of [m x k x n] under `p`, counted from the
// same loops without building them: per batch, every output tile's matmuls (its K steps in groups
// of `group`) and its eviction and store, the resident operand's DMAs (one per tile) and the
// streamed one's (one per block), both reloaded per K block when K is blocked.
struct GemmCounts {
  double matmuls = 0;  // the Tensor engine's queue
  double tiles = 0;    // output tiles: an eviction and a store each, Vector and Scalar alternating
  double loads = 0;    // the Sync engine's DMAs
  double total() const { return matmuls + 2 * tiles + loads; }
};

GemmCounts gemm_core_counts(const GemmPlan& p, std::uint64_t batches, std::uint64_t m,
                            std::uint64_t k, std::uint64_t n, std::uint64_t group) {
  const double mt = double(ceil_div(m, p.tm)), nt = double(ceil_div(n, p.tn));
  const std::uint64_t kt = ceil_div(k, p.tk);
  const std::uint64_t kblocks = ceil_div(kt, p.kb);
  const std::uint64_t last = kt - (kblocks - 1) * p.kb;
  const double matmuls_per_tile =
      double(kblocks - 1) * double(ceil_div(p.kb, group)) + double(ceil_div(last, group));
  const bool a_res = p.a_resident || !p.full_k;
  const double outer_tiles = a_res ? mt : nt, inner_tiles = a_res ? nt : mt;
  const double outer = std::ceil(outer_tiles / double(a_res ? p.mb : p.nb));
  const double inner = std::ceil(inner_tiles / double(a_res ? p.nb : p.mb));
  const double loads = p.full_k ? outer_tiles + outer * inner : double(kblocks) * inner * (mt + outer);
  const double tiles = double(batches) * mt * nt;
  return {tiles * matmuls_per_tile, tiles, double(batches) * loads};
}

// Appends the program of one core: `batches` GEMMs of [m x k x n].
void lower_gemm_core(Program& prog, const GemmPlan& p, std::uint64_t batches, std::uint64_t m,
                     std::uint64_t k, std::uint64_t n, Dtype dtype, const config::ChipParams& chip,
                     std::uint64_t a_addr, std::uint64_t b_addr, std::uint64_t c_addr,
                     double& hbm_bytes, std::uint64_t group) {
  const double elem = dtype_bytes(dtype);
  const double out_elem = dtype == Dtype::fp32 ? 4 : 2;
  const int engines = chip.core.dma.engines;
  const std::uint64_t mt = ceil_div(m, p.tm), nt = ceil_div(n, p.tn), kt = ceil_div(k, p.tk);
  const int banks = p.psum_banks;
  // With K blocked both operands reload per K block; A is then treated as the resident one.
  const bool a_res = p.a_resident || !p.full_k;

  OperandSlots sa(prog), sb(prog);
  sa.per_tile = a_res;
  sb.per_tile = !a_res;
  (a_res ? sa : sb).buffers = p.resident_buffers;
  std::vector<Semaphore*> bank_full, bank_free, out_free;
  std::vector<std::uint64_t> bank_uses(std::size_t(banks), 0), out_uses(kOutSlots, 0);
  for (int i = 0; i < banks; ++i) {
    bank_full.push_back(prog.new_semaphore());
    bank_free.push_back(prog.new_semaphore());
  }
  for (int i = 0; i < kOutSlots; ++i) out_free.push_back(prog.new_semaphore());
  prog.done = prog.new_semaphore();

  // Issues the DMAs of one operand's block: `tiles` tiles of `tile_bytes(t)` at `addr(t)`, one
  // DMA per tile or one for the block.
  auto load = [&](OperandSlots& s, int queue, std::uint64_t tiles, auto tile_bytes, auto addr) {
    const std::uint64_t after = s.begin_block();
    const int slot = s.cur;
    const std::uint64_t dmas = s.per_tile ? tiles : 1;
    for (std::uint64_t t = 0; t < dmas; ++t) {
      std::uint64_t bytes = 0;
      if (s.per_tile) {
        bytes = tile_bytes(t);
      } else {
        for (std::uint64_t u = 0; u < tiles; ++u) bytes += tile_bytes(u);
      }
      prog.push(EngineId::sync, dma(bytes, addr(t), DmaEndpoint::hbm, DmaEndpoint::sbuf, queue,
                                    engines))
          .wait(s.free[std::size_t(slot)], after)
          .signal(s.loaded[std::size_t(slot)]);
      ++s.loads[std::size_t(slot)];
      hbm_bytes += double(bytes);
    }
  };

  int ring = 0, out_slot = 0;
  bool evict_on_vector = true;
  const std::uint64_t outer_tiles = a_res ? mt : nt, inner_tiles = a_res ? nt : mt;
  const std::uint64_t outer_step = a_res ? p.mb : p.nb, inner_step = a_res ? p.nb : p.mb;
  for (std::uint64_t bi = 0; bi < batches; ++bi) {
    const std::uint64_t a_base = a_addr + std::uint64_t(double(bi * m * k) * elem);
    const std::uint64_t b_base = b_addr + std::uint64_t(double(bi * k * n) * elem);
    const std::uint64_t c_base = c_addr + std::uint64_t(double(bi * m * n) * out_elem);
    for (std::uint64_t o0 = 0; o0 < outer_tiles; o0 += outer_step) {
      for (std::uint64_t i0 = 0; i0 < inner_tiles; i0 += inner_step) {
        const bool first_inner = i0 == 0, last_inner = i0 + inner_step >= inner_tiles;
        const std::uint64_t mb0 = a_res ? o0 : i0, nb0 = a_res ? i0 : o0;
        const std::uint64_t mtiles = std::min(p.mb, mt - mb0);
        const std::uint64_t rows0 = mb0 * p.tm;
        const std::uint64_t mrows = std::min(m - rows0, mtiles * p.tm);
        const std::uint64_t ntiles = std::min(p.nb, nt - nb0);
        const std::uint64_t cols0 = nb0 * p.tn;
        const std::uint64_t ncols = std::min(n - cols0, ntiles * p.tn);
        // The resident operand loads on the first inner block and is released after the last;
        // the streamed one (and both when K is blocked) every block.
        const bool load_a = !p.full_k || !a_res || first_inner;
        const bool load_b = !p.full_k || a_res || first_inner;
        const bool free_a = !p.full_k || !a_res || last_inner;
        const bool free_b = !p.full_k || a_res || last_inner;
        for (std::uint64_t kb0 = 0; kb0 < kt; kb0 += p.kb) {
          const std::uint64_t ktiles = std::min(p.kb, kt - kb0);
          const std::uint64_t k0 = kb0 * p.tk;
          const std::uint64_t krows = std::min(k - k0, ktiles * p.tk);
          const bool last_kb = kb0 + p.kb >= kt;
          if (load_a) {
            load(sa, kQueueA, mtiles,
                 [&](std::uint64_t t) {
                   const std::uint64_t rows = std::min(p.tm, mrows - t * p.tm);
                   return std::uint64_t(std::ceil(double(rows * krows) * elem));
                 },
                 [&](std::uint64_t t) {
                   return a_base + std::uint64_t(double((rows0 + t * p.tm) * k + k0) * elem);
                 });
          }
          if (load_b) {
            load(sb, kQueueB, ntiles,
                 [&](std::uint64_t t) {
                   const std::uint64_t cols = std::min(p.tn, ncols - t * p.tn);
                   return std::uint64_t(std::ceil(double(krows * cols) * elem));
                 },
                 [&](std::uint64_t t) {
                   return b_base +
                          std::uint64_t(double(k0 * n + (cols0 + t * p.tn) * krows) * elem);
                 });
          }
          for (std::uint64_t j = 0; j < ntiles; ++j) {
            const std::uint64_t ncur = std::min(p.tn, ncols - j * p.tn);
            for (std::uint64_t i = 0; i < mtiles; ++i) {
              const std::uint64_t mcur = std::min(p.tm, mrows - i * p.tm);
              const int bank = p.full_k ? ring : int(i * ntiles + j);
              for (std::uint64_t kk0 = 0; kk0 < ktiles; kk0 += group) {
                // `reps` matmuls of this tile's contraction in one instruction (coarse mode).
                const std::uint64_t reps = std::min(group, ktiles - kk0);
                const std::uint64_t kk = kk0 + reps - 1;  // the group's last K step
                const std::uint64_t kcur = std::min(krows, (kk + 1) * p.tk) - kk0 * p.tk;
                Instr mm;
                mm.kind = Instr::Kind::matmul;
                mm.dtype = dtype;
                mm.reps = std::uint32_t(reps);
                mm.k = std::uint32_t(kcur);
                mm.m = std::uint32_t(mcur);
                mm.n = std::uint32_t(ncur);
                mm.new_stationary = true;
                mm.accumulate = !(kb0 == 0 && kk0 == 0);
                Instr& in = prog.push(EngineId::tensor, mm);
                // The first matmul that uses a tile waits for its load (loads complete in order:
                // one queue, FIFO on every engine).
                if (kk0 == 0 && j == 0) in.wait(sa.loaded[std::size_t(sa.cur)], sa.ready(i));
                if (kk0 == 0 && i == 0) in.wait(sb.loaded[std::size_t(sb.cur)], sb.ready(j));
                if (kb0 == 0 && kk0 == 0) in.wait(bank_free[std::size_t(bank)], bank_uses[std::size_t(bank)]);
                const bool tile_done = last_kb && kk + 1 == ktiles;
                const bool block_done = j + 1 == ntiles && i + 1 == mtiles && kk + 1 == ktiles;
                if (tile_done) in.signal(bank_full[std::size_t(bank)]);
                if (block_done && free_a) in.signal(sa.free[std::size_t(sa.cur)]);
                if (block_done && free_b) in.signal(sb.free[std::size_t(sb.cur)]);
              }
              if (last_kb) {
                // Evict the finished tile (Vector and Scalar alternate), then store it.
                const EngineId e = evict_on_vector ? EngineId::vector : EngineId::scalar;
                evict_on_vector = !evict_on_vector;
                const std::uint64_t elems = mcur * ncur;
                Instr ev = element(elems, 1, true);
                ev.psum_read = elems * 4;
                ev.sbuf_write = std::uint64_t(double(elems) * out_elem);
                prog.push(e, ev)
                    .wait(bank_full[std::size_t(bank)], bank_uses[std::size_t(bank)] + 1)
                    .wait(out_free[std::size_t(out_slot)], out_uses[std::size_t(out_slot)])
                    .signal(bank_free[std::size_t(bank)]);
                ++bank_uses[std::size_t(bank)];
                const auto bytes = std::uint64_t(double(elems) * out_elem);
                const std::uint64_t c_off = (rows0 + i * p.tm) * n + cols0 + j * p.tn;
                Instr st = dma(bytes, c_base + std::uint64_t(double(c_off) * out_elem),
                               DmaEndpoint::sbuf, DmaEndpoint::hbm, kQueueStore, engines);
                st.cross_engine = false;  // triggered by the engine that produced the data
                prog.push(e, st).signal(out_free[std::size_t(out_slot)]).signal(prog.done);
                ++out_uses[std::size_t(out_slot)];
                out_slot = (out_slot + 1) % kOutSlots;
                ++prog.done_target;
                hbm_bytes += double(bytes);
              }
              if (p.full_k) ring = (ring + 1) % banks;
            }
          }
        }
      }
    }
  }
}

std::uint64_t count_instructions(const Program& p) {
  std::uint64_t c = 0;
  for (const auto& q : p.queues) c += q.size();
  return c;
}

struct GemmShard {
  std::uint64_t batch0, batches, m0, m, n0, n;
};

// The (batch, M, N) work of each core: whole GEMMs per core when batch >= cores, else the M x N
// grid of cores whose busiest core reads the least from HBM. At most `cores` shards.
std::vector<GemmShard> gemm_shards(const GemmOp& g, const config::ChipParams& chip,
                                   const std::string& name) {
  const auto cores = std::uint64_t(chip.cores);
  // Validate the type and the fit once, with the whole problem's name.
  const GemmPlan probe = plan_gemm(std::min<std::uint64_t>(g.m, 128), g.k,
                                   std::min<std::uint64_t>(g.n, 512), 1, g.dtype, chip, name);
  std::vector<GemmShard> shards;
  if (g.batch >= cores) {
    for (std::uint64_t ci = 0; ci < cores; ++ci) {
      const std::uint64_t b0 = g.batch * ci / cores, b1 = g.batch * (ci + 1) / cores;
      if (b1 > b0) shards.push_back({b0, b1 - b0, 0, g.m, 0, g.n});
    }
  } else {
    const std::uint64_t per = cores / g.batch;  // cores per GEMM
    // The grid whose busiest core reads the least from HBM (each shard's own plan decides how
    // often it re-reads A or B); ties keep the fewer M splits.
    auto shard_dims = [&](std::uint64_t cm) {
      const std::uint64_t cn = per / cm;
      return std::array<std::uint64_t, 2>{ceil_div(ceil_div(g.m, cm), probe.tm) * probe.tm,
                                          ceil_div(ceil_div(g.n, cn), probe.tn) * probe.tn};
    };
    std::uint64_t best_cm = 1;
    double best = -1;
    for (std::uint64_t cm = 1; cm <= per; ++cm) {
      if (per % cm) continue;
      const auto [mc, nc] = shard_dims(cm);
      double traffic = 0;
      for (std::uint64_t m0 = 0; m0 < g.m; m0 += mc) {
        for (std::uint64_t n0 = 0; n0 < g.n; n0 += nc) {
          traffic = std::max(traffic, plan_gemm(std::min(mc, g.m - m0), g.k,
                                                std::min(nc, g.n - n0), 1, g.dtype, chip, name)
                                          .hbm_bytes);
        }
      }
      if (best < 0 || traffic < best) {
        best = traffic;
        best_cm = cm;
      }
    }
    const std::uint64_t cm = best_cm, cn = per / cm;
    const auto [mc, nc] = shard_dims(cm);
    for (std::uint64_t bi = 0; bi < g.batch; ++bi) {
      for (std::uint64_t i = 0; i < cm; ++i) {
        for (std::uint64_t j = 0; j < cn; ++j) {
          const std::uint64_t m0 = i * mc, n0 = j * nc;
          if (m0 >= g.m || n0 >= g.n) continue;
          shards.push_back({bi, 1, m0, std::min(mc, g.m - m0), n0, std::min(nc, g.n - n0)});
        }
      }
    }
  }
  return shards;
}

LoweredStep lower_gemm(const GemmOp& g, const std::string& name, const config::ChipParams& chip,
                       HbmAllocator& hbm, int granularity) {
  if (g.m == 0 || g.k == 0 || g.n == 0 || g.batch == 0) {
    throw InputError(fmt::format("op '{}': GEMM dimensions must be >= 1, got m={} k={} n={} batch={}",
                                 name, g.m, g.k, g.n, g.batch));
  }
  LoweredStep step;
  step.per_core.resize(std::size_t(chip.cores));
  step.flops = 2.0 * double(g.m) * double(g.k) * double(g.n) * double(g.batch);
  const double elem = dtype_bytes(g.dtype);
  const double out_elem = g.dtype == Dtype::fp32 ? 4 : 2;
  const std::uint64_t a = hbm.alloc(std::uint64_t(double(g.batch * g.m * g.k) * elem));
  const std::uint64_t b = hbm.alloc(std::uint64_t(double(g.batch * g.k * g.n) * elem));
  const std::uint64_t c = hbm.alloc(std::uint64_t(double(g.batch * g.m * g.n) * out_elem));
  const auto cores = std::uint64_t(chip.cores);
  const std::vector<GemmShard> shards = gemm_shards(g, chip, name);
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const GemmShard& sh = shards[s];
    const GemmPlan plan = plan_gemm(sh.m, g.k, sh.n, sh.batches, g.dtype, chip, name);
    auto prog = std::make_unique<Program>();
    prog->op_name = name;
    prog->sbuf_bytes_per_partition = plan.sbuf_bytes_per_partition;
    prog->psum_banks = plan.psum_banks;
    const auto off_a = std::uint64_t(double(sh.batch0 * g.m * g.k + sh.m0 * g.k) * elem);
    const auto off_b = std::uint64_t(double(sh.batch0 * g.k * g.n + sh.n0) * elem);
    const auto off_c = std::uint64_t(double(sh.batch0 * g.m * g.n + sh.m0 * g.n + sh.n0) * out_elem);
    const auto group = std::uint64_t(std::max(1, granularity));
    // Each queue's room, reserved before its instructions are built: a queue of millions (an
    // attention GEMM of a long context) is then not copied, and its pages not faulted again,
    // each time it grows. Room only: the program is the same.
    const GemmCounts want = gemm_core_counts(plan, sh.batches, sh.m, g.k, sh.n, group);
    const auto half = std::size_t(want.tiles) / 2;
    prog->queues[int(EngineId::tensor)].reserve(std::size_t(want.matmuls));
    prog->queues[int(EngineId::vector)].reserve(2 * (std::size_t(want.tiles) - half));
    prog->queues[int(EngineId::scalar)].reserve(2 * half);
    prog->queues[int(EngineId::sync)].reserve(std::size_t(want.loads));
    lower_gemm_core(*prog, plan, sh.batches, sh.m, g.k, sh.n, g.dtype, chip, a + off_a, b + off_b,
                    c + off_c, step.hbm_bytes, group);
    step.instructions += count_instructions(*prog);
    step.per_core[s % std::size_t(cores)] = std::move(prog);
  }
  return step;
}

// ------------------------------------------------------------------------------- element-wise

LoweredStep lower_element(const ElementOp& op, const std::string& name,
                          const config::ChipParams& chip, HbmAllocator& hbm) {
  if (op.elements == 0 || op.inputs < 1) {
    throw InputError(fmt::format("op '{}': {} needs elements >= 1 and inputs >= 1", name,
                                 to_string(op.kind)));
  }
  LoweredStep step;
  step.per_core.resize(std::size_t(chip.cores));
  const double elem = dtype_bytes(op.dtype);
  const bool wide = !is_narrow(op.dtype);
  const int inputs = op.kind == ElementKind::elementwise ? op.inputs : 1;
  const std::uint64_t parts = std::uint64_t(chip.core.sbuf.partitions);
  // Free size per tile: 8 KiB per partition per input (>= 4 KiB saturates DMA, DMAO), 3 slots.
  constexpr int kSlots = 3;
  const std::uint64_t free = std::max<std::uint64_t>(
      1, std::min<std::uint64_t>(ceil_div(op.elements, parts), std::uint64_t(8192 / elem)));
  const std::uint64_t tile = parts * free;
  const std::uint64_t tiles = ceil_div(op.elements, tile);
  const double slot_bytes = double(inputs + 1) * double(free) * elem;
  const auto footprint = std::uint64_t(std::ceil(kSlots * slot_bytes));
  if (double(footprint) > chip.core.sbuf.bytes_per_partition.si) {
    throw WorkloadError(fmt::format(
        "op '{}': {} tiles need {} bytes per SBUF partition, the core has {:.0f} "
        "(/chip/core/sbuf/bytes_per_partition)",
        name, to_string(op.kind), footprint, chip.core.sbuf.bytes_per_partition.si));
  }
  const std::uint64_t in_addr =
      hbm.alloc(std::uint64_t(double(op.elements) * elem * double(inputs)));
  const std::uint64_t out_addr = hbm.alloc(std::uint64_t(double(op.elements) * elem));
  // Element operations per element (flops): softmax max+exp+sum+scale, norm stats+apply.
  double per_elem = 1;
  if (op.kind == ElementKind::softmax) per_elem = 4;
  if (op.kind == ElementKind::norm) per_elem = 4;
  if (op.kind == ElementKind::elementwise) per_elem = std::max(1, inputs - 1);
  step.flops = per_elem * double(op.elements);
  const int engines = chip.core.dma.engines;
  struct CoreState {
    Program* prog = nullptr;
    std::vector<Semaphore*> loaded, free_, stage1, stage2;
    std::vector<std::uint64_t> uses;
    int slot = 0;
    bool toggle = false;
  };
  std::vector<CoreState> st(std::size_t(chip.cores));
  for (std::uint64_t t = 0; t < tiles; ++t) {
    const std::size_t ci = std::size_t(t % std::uint64_t(chip.cores));
    CoreState& cs = st[ci];
    if (!cs.prog) {
      step.per_core[ci] = std::make_unique<Program>();
      cs.prog = step.per_core[ci].get();
      cs.prog->op_name = name;
      cs.prog->sbuf_bytes_per_partition = footprint;
      cs.prog->done = cs.prog->new_semaphore();
      for (int s = 0; s < kSlots; ++s) {
        cs.loaded.push_back(cs.prog->new_semaphore());
        cs.free_.push_back(cs.prog->new_semaphore());
        cs.stage1.push_back(cs.prog->new_semaphore());
        cs.stage2.push_back(cs.prog->new_semaphore());
      }
      cs.uses.assign(kSlots, 0);
    }
    Program& prog = *cs.prog;
    const int s = cs.slot;
    cs.slot = (cs.slot + 1) % kSlots;
    const std::uint64_t use = ++cs.uses[std::size_t(s)];
    const std::uint64_t elems = std::min(tile, op.elements - t * tile);
    const auto in_bytes = std::uint64_t(double(elems) * elem * double(inputs));
    std::uint64_t out_elems = elems;
    if (op.kind == ElementKind::reduction) out_elems = std::min<std::uint64_t>(elems, parts);
    const auto out_bytes = std::uint64_t(double(out_elems) * elem);
    prog.push(EngineId::sync, dma(in_bytes, in_addr + std::uint64_t(double(t * tile) * elem * inputs),
                                  DmaEndpoint::hbm, DmaEndpoint::sbuf, kQueueA, engines))
        .wait(cs.free_[std::size_t(s)], use - 1)
        .signal(cs.loaded[std::size_t(s)]);
    step.hbm_bytes += double(in_bytes + out_bytes);
    auto op_instr = [&](std::uint64_t n, int ins, std::uint64_t out) {
      Instr in = element(n, ins, wide);
      in.sbuf_read = std::uint64_t(double(n * std::uint64_t(ins)) * elem);
      in.sbuf_write = std::uint64_t(double(out) * elem);
      return in;
    };
    EngineId last = EngineId::vector;
    switch (op.kind) {
      case ElementKind::elementwise:
        // Vector and GpSimd share SBUF access from NC-v3 on: alternate tiles between them.
        last = cs.toggle ? EngineId::gpsimd : EngineId::vector;
        cs.toggle = !cs.toggle;
        prog.push(last, op_instr(elems, inputs, elems)).wait(cs.loaded[std::size_t(s)], use);
        break;
      case ElementKind::activation:
        last = EngineId::scalar;
        prog.push(last, op_instr(elems, 1, elems)).wait(cs.loaded[std::size_t(s)], use);
        break;
      case ElementKind::reduction:
        last = EngineId::vector;
        prog.push(last, op_instr(elems, 1, out_elems)).wait(cs.loaded[std::size_t(s)], use);
        break;
      case ElementKind::softmax:
        // Row max on Vector, exp with running sum on Scalar, scale by 1/sum on Vector.
        prog.push(EngineId::vector, op_instr(elems, 1, parts))
            .wait(cs.loaded[std::size_t(s)], use)
            .signal(cs.stage1[std::size_t(s)]);
        prog.push(EngineId::scalar, op_instr(elems, 1, elems))
            .wait(cs.stage1[std::size_t(s)], use)
            .signal(cs.stage2[std::size_t(s)]);
        last = EngineId::vector;
        prog.push(last, op_instr(elems, 1, elems)).wait(cs.stage2[std::size_t(s)], use);
        break;
      case ElementKind::norm:
        // Mean/variance (bn_stats) on Vector, normalise and scale on Scalar.
        prog.push(EngineId::vector, op_instr(elems, 1, parts))
            .wait(cs.loaded[std::size_t(s)], use)
            .signal(cs.stage1[std::size_t(s)]);
        last = EngineId::scalar;
        prog.push(last, op_instr(elems, 1, elems)).wait(cs.stage1[std::size_t(s)], use);
        break;
    }
    Instr store = dma(out_bytes, out_addr + std::uint64_t(double(t * tile) * elem),
                      DmaEndpoint::sbuf, DmaEndpoint::hbm, kQueueStore, engines);
    store.cross_engine = false;
    prog.push(last, store).signal(cs.free_[std::size_t(s)]).signal(prog.done);
    ++prog.done_target;
  }
  for (auto& p : step.per_core) {
    if (p) step.instructions += count_instructions(*p);
  }
  return step;
}

LoweredStep lower_memcpy(const MemcpyOp& op, const std::string& name,
                         const config::ChipParams& chip, HbmAllocator& hbm) {
  if (op.bytes == 0) throw InputError(fmt::format("op '{}': memcpy of 0 bytes", name));
  LoweredStep step;
  step.per_core.resize(std::size_t(chip.cores));
  const std::uint64_t src = hbm.alloc(op.bytes);
  constexpr std::uint64_t kChunk = 1 << 20;  // one DMA instruction per MiB (lowered_instructions)
  const std::uint64_t chunks = ceil_div(op.bytes, kChunk);
  for (std::uint64_t c = 0; c < chunks; ++c) {
    const std::size_t ci = std::size_t(c % std::uint64_t(chip.cores));
    auto& p = step.per_core[ci];
    if (!p) {
      p = std::make_unique<Program>();
      p->op_name = name;
      p->done = p->new_semaphore();
    }
    const std::uint64_t bytes = std::min(kChunk, op.bytes - c * kChunk);
    Instr in = dma(bytes, src + c * kChunk, DmaEndpoint::hbm, DmaEndpoint::hbm, kQueueA,
                   chip.core.dma.engines);
    in.cross_engine = false;
    p->push(EngineId::sync, in).signal(p->done);
    ++p->done_target;
    step.hbm_bytes += 2.0 * double(bytes);
  }
  for (auto& p : step.per_core) {
    if (p) step.instructions += count_instructions(*p);
  }
  return step;
}

double gemm_core_instructions(const GemmPlan& p, std::uint64_t batches, std::uint64_t m,
                              std::uint64_t k, std::uint64_t n, std::uint64_t group) {
  return gemm_core_counts(p, batches, m, k, n, group).total();
}

double gemm_instructions(const GemmOp& g, const config::ChipParams& chip, int granularity) {
  if (g.m == 0 || g.k == 0 || g.n == 0 || g.batch == 0) return 0;
  double total = 0;
  for (const GemmShard& sh : gemm_shards(g, chip, "")) {
    const GemmPlan plan = plan_gemm(sh.m, g.k, sh.n, sh.batches, g.dtype, chip, "");
    total += gemm_core_instructions(plan, sh.batches, sh.m, g.k, sh.n,
                                    std::uint64_t(std::max(1, granularity)));
  }
  return total;
}

// lower_element(): per tile a load, the op's 1 to 3 engine instructions and a store.
double element_instructions(const ElementOp& op, const config::ChipParams& chip) {
  if (op.elements == 0) return 0;
  const double elem = dtype_bytes(op.dtype);
  const std::uint64_t parts = std::uint64_t(chip.core.sbuf.partitions);
  const std::uint64_t free = std::max<std::uint64_t>(
      1, std::min<std::uint64_t>(ceil_div(op.elements, parts), std::uint64_t(8192 / elem)));
  const double per_tile = op.kind == ElementKind::softmax ? 5 : op.kind == ElementKind::norm ? 4 : 3;
  return double(ceil_div(op.elements, parts * free)) * per_tile;
}

}  // namespace

std::vector<LoweredStep> lower(const ComputeOp& op, const std::string& name,
                               const config::ChipParams& chip, HbmAllocator& hbm,
                               int granularity) {
  std::vector<LoweredStep> steps;
  if (const auto* g = std::get_if<GemmOp>(&op)) {
    steps.push_back(lower_gemm(*g, name, chip, hbm, granularity));
  } else if (const auto* e = std::get_if<ElementOp>(&op)) {
    steps.push_back(lower_element(*e, name, chip, hbm));
  } else if (const auto* a = std::get_if<AttentionOp>(&op)) {
    if (a->batch == 0 || a->heads == 0 || a->seq_q == 0 || a->seq_kv == 0 || a->head_dim == 0) {
      throw InputError(fmt::format("op '{}': attention dimensions must be >= 1", name));
    }
    const std::uint64_t bh = a->batch * a->heads;
    steps.push_back(lower_gemm(GemmOp{a->seq_q, a->head_dim, a->seq_kv, a->dtype, bh},
                               name + "/qk", chip, hbm, granularity));
    steps.push_back(lower_element(
        ElementOp{ElementKind::softmax, bh * a->seq_q * a->seq_kv,
                  a->dtype == Dtype::fp32 ? Dtype::fp32 : Dtype::bf16, 1},
        name + "/softmax", chip, hbm));
    // P is BF16 after softmax (FP32 stays FP32); the PV GEMM runs in that type.
    steps.push_back(lower_gemm(GemmOp{a->seq_q, a->seq_kv, a->head_dim,
                                      a->dtype == Dtype::fp32 ? Dtype::fp32 : Dtype::bf16, bh},
                               name + "/pv", chip, hbm, granularity));
  } else if (const auto* c = std::get_if<MemcpyOp>(&op)) {
    steps.push_back(lower_memcpy(*c, name, chip, hbm));
  }
  for (auto& step : steps) {
    for (auto& program : step.per_core) {
      if (program) program->reserve_signals();
    }
  }
  return steps;
}

double lowered_instructions(const ComputeOp& op, const config::ChipParams& chip, int granularity) {
  if (const auto* g = std::get_if<GemmOp>(&op)) return gemm_instructions(*g, chip, granularity);
  if (const auto* e = std::get_if<ElementOp>(&op)) return element_instructions(*e, chip);
  if (const auto* a = std::get_if<AttentionOp>(&op)) {
    if (a->batch == 0 || a->heads == 0 || a->seq_q == 0 || a->seq_kv == 0 || a->head_dim == 0) return 0;
    const std::uint64_t bh = a->batch * a->heads;
    const Dtype p = a->dtype == Dtype::fp32 ? Dtype::fp32 : Dtype::bf16;
    return gemm_instructions(GemmOp{a->seq_q, a->head_dim, a->seq_kv, a->dtype, bh}, chip, granularity) +
           element_instructions(ElementOp{ElementKind::softmax, bh * a->seq_q * a->seq_kv, p, 1}, chip) +
           gemm_instructions(GemmOp{a->seq_q, a->seq_kv, a->head_dim, p, bh}, chip, granularity);
  }
  if (const auto* c = std::get_if<MemcpyOp>(&op)) return std::ceil(double(c->bytes) / double(1 << 20));
  return 0;
}

}  // namespace trnsim::model
