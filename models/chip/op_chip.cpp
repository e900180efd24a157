// SPDX-License-Identifier: MIT
#include "chip/op_chip.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/activity.hpp"
#include "trnsim/error.hpp"

namespace trnsim::model {

using sc_core::sc_time;

namespace {

// Profiles keep whole picoseconds, so that an isolated occurrence ends on the tile model's
// picosecond.
sc_time from_ps(std::int64_t ps) {
  static const bool ps_resolution =
      sc_core::sc_get_time_resolution() == sc_time(1, sc_core::SC_PS);
  if (ps <= 0) return sc_core::SC_ZERO_TIME;
  if (ps_resolution) return sc_time::from_value(sc_time::value_type(ps));
  return sc_time(double(ps), sc_core::SC_PS);
}

constexpr const char* kEngines[4] = {"tensor", "vector", "scalar", "gpsimd"};

// How long an op's memory traffic occupies its cores' DMA queues: all its slices, each as long as
// the calibration's probe of one slice on an idle memory.
std::int64_t dma_stream_ps(const OpProfile& p) {
  return std::int64_t(kOpPieces) * op_slices(p) * p.memory_ps;
}

}  // namespace

OpCore::OpCore(const sc_core::sc_module_name& name) : Block(name) {
  for (std::size_t e = 0; e < busy.size(); ++e) {
    busy[e] = &stats().add(OpCoreStats::engine_busy, kEngines[e]);
  }
}

std::optional<double> OpCore::utilisation(Duration elapsed) const {
  if (elapsed.si <= 0) return 0.0;
  double most = 0;
  for (const Timeline& t : engines) most = std::max(most, t.busy().to_seconds());
  return most / elapsed.si;
}

OpChip::OpChip(const sc_core::sc_module_name& name, const config::ChipParams& p, ChipOptions opt)
    : ChipModel(name),
      p_(p),
      table_(std::move(opt.calibration)),
      ops_(stats().add(OpChipStats::ops)),
      interpolated_(stats().add(OpChipStats::interpolated_ops)),
      flops_(stats().add(OpChipStats::flops)),
      hbm_bytes_(stats().add(OpChipStats::hbm_bytes)),
      contention_(stats().add(OpChipStats::memory_wait)) {
  if (!table_) throw InternalError(fmt::format("{}: op-level chip without a calibration", this->name()));
  set_static_power(Power(table_->static_power_w));
  if (opt.memory) {
    memory_ = opt.memory;
  } else {
    if (!opt.make_memory) throw InternalError("OpChip: no memory and no memory factory");
    MemoryBlock m = opt.make_memory("hbm");
    memory_ = m.port;
    owned_memory_ = std::move(m.block);
  }
  sbuf_capacity_ = whole_bytes(p.core.sbuf.bytes_per_partition);
  psum_capacity_ = std::uint64_t(p.core.psum.banks);
  for (int c = 0; c < p.cores; ++c) {
    cores_.push_back(std::make_unique<OpCore>(fmt::format("nc{}", c).c_str()));
  }
}

OpChip::~OpChip() = default;

void OpChip::account_until(const sc_time& t) {
  if (owned_memory_) memory_->account_until(t);
}

void OpChip::acquire(const OpProfile& p, int used) {
  const auto room = [&] {
    for (int c = 0; c < used; ++c) {
      const OpCore& core = *cores_[std::size_t(c)];
      if (core.sbuf_used + p.sbuf_bytes_per_partition > sbuf_capacity_ ||
          core.psum_used + std::uint64_t(p.psum_banks) > psum_capacity_) {
        return false;
      }
    }
    return true;
  };
  while (!room()) wait_counted(activity(), freed_);
  for (int c = 0; c < used; ++c) {
    cores_[std::size_t(c)]->sbuf_used += p.sbuf_bytes_per_partition;
    cores_[std::size_t(c)]->psum_used += std::uint64_t(p.psum_banks);
  }
}

void OpChip::release(const OpProfile& p, int used) {
  for (int c = 0; c < used; ++c) {
    cores_[std::size_t(c)]->sbuf_used -= p.sbuf_bytes_per_partition;
    cores_[std::size_t(c)]->psum_used -= std::uint64_t(p.psum_banks);
  }
  freed_.notify(sc_core::SC_ZERO_TIME);
}

OpStats OpChip::fast_forward(const ComputeOp& op, const ComputeOp& counterpart,
                             const std::string& name, const sc_time& duration) {
  OpProfile scratch, cp_scratch;
  bool interpolated = false;
  const OpProfile& pr = profile_of(table_.get(), op, scratch, this->name(), name, &interpolated);
  const OpProfile& cp = profile_of(table_.get(), counterpart, cp_scratch, this->name(), name);
  if (interpolated) interpolated_ += 1;
  // Its engines are held from now for their calibrated busy time, so that ops simulated beside
  // it still queue for them (Timeline reservations: no events).
  const int used = std::min(pr.cores_used, cores());
  for (int c = 0; c < used; ++c) {
    OpCore& core = *cores_[std::size_t(c)];
    for (std::size_t e = 0; e < core.engines.size(); ++e) {
      const sc_time share = from_ps(std::llround(pr.engine_busy_s[e] * 1e12 / used));
      if (share == sc_core::SC_ZERO_TIME) continue;
      core.engines[e].reserve(now(), share);
      *core.busy[e] += share.to_seconds();
    }
  }
  // Its memory traffic joins the cores' DMA queues likewise (as long as it takes alone, at most
  // the op's time), so that an op simulated beside it queues behind it there too.
  const std::int64_t mem_ps = std::min<std::int64_t>(pr.time_ps, dma_stream_ps(pr));
  if (mem_ps > 0) {
    for (int c = 0; c < used; ++c) cores_[std::size_t(c)]->dma.reserve(now(), from_ps(mem_ps));
  }
  OpStats st = replay_profile(pr, cp, name, used, duration);
  ops_ += 1;
  flops_ += st.flops;
  hbm_bytes_ += st.hbm_bytes;
  return st;
}

OpStats OpChip::execute(const ComputeOp& op, const std::string& name) {
  OpProfile scratch;
  bool interpolated = false;
  const OpProfile* pr = &profile_of(table_.get(), op, scratch, this->name(), name, &interpolated);
  if (interpolated) interpolated_ += 1;
  OpStats st;
  st.name = name;
  const int used = std::min(pr->cores_used, cores());
  acquire(*pr, used);
  st.start_s = now().to_seconds();
  const std::uint64_t accrual = begin_accrual(pr->actions, now(), from_ps(pr->time_ps));
  const sc_time memory_alone = from_ps(pr->memory_ps);
  SliceOp so;
  begin_slices(so);
  // Each engine's share of a piece on each core, in whole picoseconds.
  std::array<sc_time, 4> engine_share{};
  for (std::size_t e = 0; e < engine_share.size() && used > 0; ++e) {
    engine_share[e] = from_ps(std::llround(pr->engine_busy_s[e] * 1e12 / (used * kOpPieces)));
  }
  // DMA queues are FIFO: the op's descriptors join each used core's queues when it starts, so
  // its memory traffic (as long as it takes alone, at most the op's time) follows what earlier
  // ops queued there; piece k ends no earlier than k / kOpPieces of that stream.
  const std::int64_t mem_ps = std::min<std::int64_t>(pr->time_ps, dma_stream_ps(*pr));
  sc_time dma_start = now();
  if (mem_ps > 0) {
    for (int c = 0; c < used; ++c) {
      const sc_time e = cores_[std::size_t(c)]->dma.reserve(now(), from_ps(mem_ps));
      dma_start = std::max(dma_start, e - from_ps(mem_ps));
    }
  }
  for (int piece = 0; piece < kOpPieces; ++piece) {
    const std::int64_t share = pr->time_ps / kOpPieces + (piece < pr->time_ps % kOpPieces ? 1 : 0);
    sc_time end = now() + from_ps(share);
    if (mem_ps > 0) end = std::max(end, dma_start + from_ps(mem_ps * (piece + 1) / kOpPieces));
    for (int c = 0; c < used; ++c) {
      OpCore& core = *cores_[std::size_t(c)];
      for (std::size_t e = 0; e < engine_share.size(); ++e) {
        if (engine_share[e] == sc_core::SC_ZERO_TIME) continue;
        end = std::max(end, core.engines[e].reserve(now(), engine_share[e]));
        *core.busy[e] += engine_share[e].to_seconds();
      }
    }
    // The piece's HBM traffic in slices spread over its share (issued by the chip's slice
    // method, chip_model.hpp); it ends as much later as its latest slice finished later than
    // alone: the slice method wakes it then.
    const int slices = op_slices(*pr);
    const sc_time start = now();
    so.left = slices;
    so.end = end;
    so.memory_alone = memory_alone;
    so.wait_mem = sc_core::SC_ZERO_TIME;
    for (int k = 0; k < slices; ++k) {
      post_slice(start + from_ps(share * k / slices), so, std::uint32_t(piece * slices + k),
                 slice_bytes(*pr, piece * slices + k), &so);
    }
    // One wake-up per piece, at its end.
    wait_woken(so, std::uint64_t(piece) + 1);
    contention_ += so.wait_mem.to_seconds();
  }
  end_slices(so);
  release(*pr, used);
  end_accrual(accrual);
  for (const auto& [a, m] : pr->actions) meter(a, 0).count_priced(m.quantity, m.rated_j);
  st.end_s = now().to_seconds();
  st.time_s = st.end_s - st.start_s;
  st.flops = pr->flops;
  st.hbm_bytes = pr->hbm_bytes;
  st.instructions = pr->instructions;
  st.cores_used = used;
  ops_ += 1;
  flops_ += st.flops;
  hbm_bytes_ += st.hbm_bytes;
  return st;
}

}  // namespace trnsim::model
