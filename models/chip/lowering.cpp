// SPDX-License-Identifier: MIT
#include "chip/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
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
    throw ConfigError(fmt::format("op '{}': a PSUM bank holds no FP32 element "
                                  "(/chip/core/psum/bytes_per_partition)", op));
  }
  const double elem = element_bytes(dtype);
  const double out_elem = dtype == Dtype::fp32 ? 4 : 2;
  const std::uint64_t mt = ceil_div(m, p.tm), nt = ceil_div(n, p.tn), kt = ceil_div(k, p.tk);
  const double a_tile = double(kf * p.tm) * elem;  // bytes per partition of one A tile
  const double b_tile = double(kf * p.tn) * elem;
  const double staging = kOutSlots * double(p.tn) * out_elem;
  const double cap = core.sbuf.bytes_per_partition.si;
  auto need = [&](std::uint64_t mb, std::uint64_t nb, std::uint64_t kb, int abufs) {
    return abufs * double(mb * kb) * a_tile + 2 * double(nb * kb) * b_tile + staging;
  };
  // Whole K resident: the largest A block that fits, B blocks of >= kMinBlockBytes.
  const auto nb_want = std::min<std::uint64_t>(
      nt, std::max<std::uint64_t>(1, std::uint64_t(std::ceil(kMinBlockBytes /
                                                              (double(k) * p.tn * elem)))));
  for (std::uint64_t nb : {nb_want, std::uint64_t(1)}) {
    for (std::uint64_t mb = mt; mb >= 1; --mb) {
      const int abufs = (mb == mt && batches == 1) ? 1 : 2;
      const double bytes = need(mb, nb, kt, abufs);
      if (bytes <= cap) {
        p.mb = mb;
        p.nb = nb;
        p.kb = kt;
        p.full_k = true;
        p.a_buffers = abufs;
        p.sbuf_bytes_per_partition = std::uint64_t(std::ceil(bytes));
        p.psum_banks = core.psum.banks;
        return p;
      }
    }
  }
  // K blocked: Mb * Nb tiles accumulate in PSUM at once, the largest K block that fits.
  const auto banks = std::uint64_t(core.psum.banks);
  for (std::uint64_t mb : {std::min<std::uint64_t>(mt, 2), std::uint64_t(1)}) {
    const std::uint64_t nb = std::min<std::uint64_t>(nt, std::max<std::uint64_t>(1, banks / mb));
    const double per_k = 2 * double(mb) * a_tile + 2 * double(nb) * b_tile;
    if (cap - staging < per_k) continue;
    const auto kb = std::min<std::uint64_t>(kt, std::uint64_t((cap - staging) / per_k));
    p.mb = mb;
    p.nb = nb;
    p.kb = kb;
    p.full_k = false;
    p.a_buffers = 2;
    p.sbuf_bytes_per_partition = std::uint64_t(std::ceil(need(mb, nb, kb, 2)));
    p.psum_banks = int(mb * nb);
    return p;
  }
  throw ConfigError(fmt::format(
      "op '{}': GEMM {}x{}x{} {} cannot be tiled into SBUF: one 128-row A tile, one B tile "
      "(double-buffered) and {} output tiles need {:.0f} bytes per partition, the core has "
      "{:.0f} (/chip/core/sbuf/bytes_per_partition)",
      op, m, k, n, to_string(dtype), kOutSlots, need(1, 1, 1, 2), cap));
}

namespace {

// Appends the program of one core: `batches` GEMMs of [m x k x n].
void lower_gemm_core(Program& prog, const GemmPlan& p, std::uint64_t batches, std::uint64_t m,
                     std::uint64_t k, std::uint64_t n, Dtype dtype, const config::ChipParams& chip,
                     std::uint64_t a_addr, std::uint64_t b_addr, std::uint64_t c_addr,
                     double& hbm_bytes, std::uint64_t group) {
  const double elem = element_bytes(dtype);
  const double out_elem = dtype == Dtype::fp32 ? 4 : 2;
  const int engines = chip.core.dma.engines;
  const std::uint64_t mt = ceil_div(m, p.tm), nt = ceil_div(n, p.tn), kt = ceil_div(k, p.tk);
  const int banks = p.psum_banks;

  std::vector<Semaphore*> a_loaded, a_free, b_loaded, b_free, bank_full, bank_free, out_free;
  // a_uses: A tiles loaded into each slot so far; a_free_uses: A blocks released from it.
  std::vector<std::uint64_t> a_uses(2, 0), a_free_uses(2, 0), b_uses(2, 0),
      bank_uses(std::size_t(banks), 0), out_uses(kOutSlots, 0);
  for (int i = 0; i < 2; ++i) {
    a_loaded.push_back(prog.new_semaphore());
    a_free.push_back(prog.new_semaphore());
    b_loaded.push_back(prog.new_semaphore());
    b_free.push_back(prog.new_semaphore());
  }
  for (int i = 0; i < banks; ++i) {
    bank_full.push_back(prog.new_semaphore());
    bank_free.push_back(prog.new_semaphore());
  }
  for (int i = 0; i < kOutSlots; ++i) out_free.push_back(prog.new_semaphore());
  prog.done = prog.new_semaphore();

  int a_slot = 0, b_slot = 0, ring = 0, out_slot = 0;
  bool evict_on_vector = true;
  for (std::uint64_t bi = 0; bi < batches; ++bi) {
    const std::uint64_t a_base = a_addr + std::uint64_t(double(bi * m * k) * elem);
    const std::uint64_t b_base = b_addr + std::uint64_t(double(bi * k * n) * elem);
    const std::uint64_t c_base = c_addr + std::uint64_t(double(bi * m * n) * out_elem);
    for (std::uint64_t mb0 = 0; mb0 < mt; mb0 += p.mb) {
      const std::uint64_t mtiles = std::min(p.mb, mt - mb0);
      const std::uint64_t rows0 = mb0 * p.tm;
      const std::uint64_t mrows = std::min(m - rows0, mtiles * p.tm);
      int cur_a = -1;
      std::uint64_t cur_a_base = 0;  // A tiles loaded into cur_a before this block
      for (std::uint64_t nb0 = 0; nb0 < nt; nb0 += p.nb) {
        const std::uint64_t ntiles = std::min(p.nb, nt - nb0);
        const std::uint64_t cols0 = nb0 * p.tn;
        const std::uint64_t ncols = std::min(n - cols0, ntiles * p.tn);
        const bool last_nb = nb0 + p.nb >= nt;
        for (std::uint64_t kb0 = 0; kb0 < kt; kb0 += p.kb) {
          const std::uint64_t ktiles = std::min(p.kb, kt - kb0);
          const std::uint64_t k0 = kb0 * p.tk;
          const std::uint64_t krows = std::min(k - k0, ktiles * p.tk);
          const bool last_kb = kb0 + p.kb >= kt;
          // A block: loaded once per (batch, M block) when K is whole, else per K block; one
          // DMA per 128-row tile, so the first matmuls wait for their own A tile, not the block.
          if (!p.full_k || nb0 == 0) {
            const int s = a_slot;
            if (p.a_buffers == 2) a_slot ^= 1;
            for (std::uint64_t i = 0; i < mtiles; ++i) {
              const std::uint64_t r0 = rows0 + i * p.tm;
              const std::uint64_t rows = std::min(p.tm, mrows - i * p.tm);
              const auto bytes = std::uint64_t(std::ceil(double(rows * krows) * elem));
              prog.push(EngineId::sync,
                        dma(bytes, a_base + std::uint64_t(double(r0 * k + k0) * elem),
                            DmaEndpoint::hbm, DmaEndpoint::sbuf, kQueueA, engines))
                  .wait(a_free[std::size_t(s)], a_free_uses[std::size_t(s)])
                  .signal(a_loaded[std::size_t(s)]);
              hbm_bytes += double(bytes);
            }
            cur_a = s;
            cur_a_base = a_uses[std::size_t(s)];
            a_uses[std::size_t(s)] += mtiles;
            ++a_free_uses[std::size_t(s)];
          }
          const int bs = b_slot;
          b_slot ^= 1;
          {
            const auto bytes = std::uint64_t(std::ceil(double(krows * ncols) * elem));
            prog.push(EngineId::sync,
                      dma(bytes, b_base + std::uint64_t(double(k0 * n + cols0 * krows) * elem),
                          DmaEndpoint::hbm, DmaEndpoint::sbuf, kQueueB, engines))
                .wait(b_free[std::size_t(bs)], b_uses[std::size_t(bs)])
                .signal(b_loaded[std::size_t(bs)]);
            hbm_bytes += double(bytes);
          }
          const std::uint64_t b_use = ++b_uses[std::size_t(bs)];
          bool first_b = true;
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
                if (first_b) in.wait(b_loaded[std::size_t(bs)], b_use);
                // The first matmul of each M tile waits for that tile's A load (in order: one
                // queue, FIFO on every engine).
                if (kk0 == 0 && j == 0) {
                  in.wait(a_loaded[std::size_t(cur_a)], cur_a_base + i + 1);
                }
                first_b = false;
                if (kb0 == 0 && kk0 == 0) in.wait(bank_free[std::size_t(bank)], bank_uses[std::size_t(bank)]);
                const bool tile_done = last_kb && kk + 1 == ktiles;
                const bool block_done = j + 1 == ntiles && i + 1 == mtiles && kk + 1 == ktiles;
                if (tile_done) in.signal(bank_full[std::size_t(bank)]);
                if (block_done) in.signal(b_free[std::size_t(bs)]);
                if (block_done && (!p.full_k || last_nb)) in.signal(a_free[std::size_t(cur_a)]);
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

LoweredStep lower_gemm(const GemmOp& g, const std::string& name, const config::ChipParams& chip,
                       HbmAllocator& hbm, int granularity) {
  if (g.m == 0 || g.k == 0 || g.n == 0 || g.batch == 0) {
    throw InputError(fmt::format("op '{}': GEMM dimensions must be >= 1, got m={} k={} n={} batch={}",
                                 name, g.m, g.k, g.n, g.batch));
  }
  LoweredStep step;
  step.per_core.resize(std::size_t(chip.cores));
  step.flops = 2.0 * double(g.m) * double(g.k) * double(g.n) * double(g.batch);
  const double elem = element_bytes(g.dtype);
  const double out_elem = g.dtype == Dtype::fp32 ? 4 : 2;
  const std::uint64_t a = hbm.alloc(std::uint64_t(double(g.batch * g.m * g.k) * elem));
  const std::uint64_t b = hbm.alloc(std::uint64_t(double(g.batch * g.k * g.n) * elem));
  const std::uint64_t c = hbm.alloc(std::uint64_t(double(g.batch * g.m * g.n) * out_elem));
  const auto cores = std::uint64_t(chip.cores);
  // Validate the type and the fit once, with the whole problem's name.
  const GemmPlan probe = plan_gemm(std::min<std::uint64_t>(g.m, 128), g.k,
                                   std::min<std::uint64_t>(g.n, 512), 1, g.dtype, chip, name);
  struct Shard {
    std::uint64_t batch0, batches, m0, m, n0, n;
  };
  std::vector<Shard> shards;
  if (g.batch >= cores) {
    for (std::uint64_t ci = 0; ci < cores; ++ci) {
      const std::uint64_t b0 = g.batch * ci / cores, b1 = g.batch * (ci + 1) / cores;
      if (b1 > b0) shards.push_back({b0, b1 - b0, 0, g.m, 0, g.n});
    }
  } else {
    const std::uint64_t per = cores / g.batch;  // cores per GEMM
    std::uint64_t best_cm = 1;
    double best = -1;
    for (std::uint64_t cm = 1; cm <= per; ++cm) {
      if (per % cm) continue;
      const std::uint64_t cn = per / cm;
      const std::uint64_t mc = ceil_div(ceil_div(g.m, cm), probe.tm) * probe.tm;
      const std::uint64_t nc = ceil_div(ceil_div(g.n, cn), probe.tn) * probe.tn;
      const double traffic = double(std::min(mc, g.m) + std::min(nc, g.n)) * double(g.k);
      if (best < 0 || traffic < best) {
        best = traffic;
        best_cm = cm;
      }
    }
    const std::uint64_t cm = best_cm, cn = per / cm;
    const std::uint64_t mc = ceil_div(ceil_div(g.m, cm), probe.tm) * probe.tm;
    const std::uint64_t nc = ceil_div(ceil_div(g.n, cn), probe.tn) * probe.tn;
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
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const Shard& sh = shards[s];
    const GemmPlan plan = plan_gemm(sh.m, g.k, sh.n, sh.batches, g.dtype, chip, name);
    auto prog = std::make_unique<Program>();
    prog->op_name = name;
    prog->sbuf_bytes_per_partition = plan.sbuf_bytes_per_partition;
    prog->psum_banks = plan.psum_banks;
    const auto off_a = std::uint64_t(double(sh.batch0 * g.m * g.k + sh.m0 * g.k) * elem);
    const auto off_b = std::uint64_t(double(sh.batch0 * g.k * g.n + sh.n0) * elem);
    const auto off_c = std::uint64_t(double(sh.batch0 * g.m * g.n + sh.m0 * g.n + sh.n0) * out_elem);
    lower_gemm_core(*prog, plan, sh.batches, sh.m, g.k, sh.n, g.dtype, chip, a + off_a, b + off_b,
                    c + off_c, step.hbm_bytes, std::uint64_t(std::max(1, granularity)));
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
  const double elem = element_bytes(op.dtype);
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
    throw ConfigError(fmt::format(
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
  constexpr std::uint64_t kChunk = 1 << 20;  // one DMA instruction per MiB
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
  return steps;
}

}  // namespace trnsim::model
