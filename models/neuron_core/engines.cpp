// SPDX-License-Identifier: MIT
#include "neuron_core/engines.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/activity.hpp"
#include "neuron_core/dma.hpp"
#include "neuron_core/sram.hpp"
#include "trnsim/error.hpp"

namespace trnsim::model {

using sc_core::sc_time;

const char* engine_name(EngineId e) {
  switch (e) {
    case EngineId::tensor: return "tensor";
    case EngineId::vector: return "vector";
    case EngineId::scalar: return "scalar";
    case EngineId::gpsimd: return "gpsimd";
    case EngineId::sync: return "sync";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------- Sram

Sram::Sram(const sc_core::sc_module_name& name, const config::SramParams& p, Unit unit)
    : Block(name),
      p_(p),
      unit_(unit),
      capacity_(unit == Unit::banks ? std::uint64_t(p.banks)
                                    : whole_bytes(p.bytes_per_partition)),
      read_action_(unit == Unit::banks ? Action::psum_read : Action::sbuf_read),
      write_action_(unit == Unit::banks ? Action::psum_write : Action::sbuf_write),
      read_(stats().add(SramStats::bytes_read)),
      written_(stats().add(SramStats::bytes_written)),
      peak_(stats().add(unit == Unit::banks ? SramStats::peak_banks : SramStats::peak_bytes)) {}

void Sram::check_fits(std::uint64_t units, const std::string& op) const {
  if (units <= capacity_) return;
  if (unit_ == Unit::banks) {
    throw WorkloadError(fmt::format(
        "op '{}': needs {} PSUM banks, the core has {} (/chip/core/psum/banks)", op, units,
        capacity_));
  }
  throw WorkloadError(fmt::format(
      "op '{}': needs {} bytes per SBUF partition, the core has {} "
      "(/chip/core/sbuf/bytes_per_partition)",
      op, units, capacity_));
}

void Sram::acquire(std::uint64_t units, const std::string& op) {
  check_fits(units, op);
  while (used_ + units > capacity_) sc_core::wait(freed_);
  used_ += units;
  peak_.max_with(double(used_));
}

void Sram::release(std::uint64_t units) {
  used_ -= std::min(units, used_);
  freed_.notify(sc_core::SC_ZERO_TIME);
}

// -------------------------------------------------------------------------------------- Engine

Engine::Engine(const sc_core::sc_module_name& name, EngineId id, DmaSystem& dma,
               std::uint64_t& wakeups)
    : Block(name),
      id_(id),
      dma_(dma),
      wakeups_(wakeups),
      instructions_(stats().add(EngineStats::instructions)),
      busy_stat_(stats().add(EngineStats::busy)) {
  SC_METHOD(run);
  sensitive << work_;
  dont_initialize();
}

void Engine::run() {
  ++wakeups_;
  activity().count(Activity::engine);
  while (!queue_.empty()) {  // an empty queue: back to the static sensitivity (work_)
    const Instr& in = *queue_.front();
    // Each semaphore is a cache miss of its own (they live in the op's program): start them
    // all at once instead of one after another along the waits and then the signals.
    for (int i = 0; i < in.nwaits; ++i) __builtin_prefetch(in.waits[std::size_t(i)].sem);
    for (int i = 0; i < in.nsignals; ++i) __builtin_prefetch(in.signals[std::size_t(i)]);
    sc_time operands = sc_core::sc_time_stamp();
    const Semaphore* missing = nullptr;
    for (int i = 0; i < in.nwaits; ++i) {
      const auto t = in.waits[std::size_t(i)].sem->reaches(in.waits[std::size_t(i)].target);
      if (!t) {
        missing = in.waits[std::size_t(i)].sem;
        break;
      }
      operands = std::max(operands, *t);
    }
    if (missing) {  // the producer has not signalled yet: sleep until it does
      next_trigger(missing->changed());
      return;
    }
    queue_.pop();
    instructions_ += 1;
    const sc_time start = std::max(free_at_, operands);
    if (in.kind == Instr::Kind::dma) {
      // Blocked on another engine's semaphore: the trigger pays the DMA start latency.
      const bool waited = in.cross_engine && in.nwaits > 0 && operands > free_at_;
      free_at_ = dma_.trigger(in, start, waited);
      continue;
    }
    const sc_time end = execute(in, start, operands);
    busy_ += end - start;
    busy_stat_.value = busy_.to_seconds();
    free_at_ = end;
    const sc_time visible = end + result_latency();
    for (int i = 0; i < in.nsignals; ++i) in.signals[std::size_t(i)]->signal_at(visible);
  }
}

// -------------------------------------------------------------------------------- TensorEngine

TensorEngine::TensorEngine(const sc_core::sc_module_name& name,
                           const config::TensorEngineParams& p, DmaSystem& dma, Sram& sbuf,
                           Sram& psum, std::uint64_t& wakeups)
    : Engine(name, EngineId::tensor, dma, wakeups),
      p_(p),
      sbuf_(sbuf),
      psum_(psum),
      drain_(to_sc(cycle_time(p.clock) * double(p.fixed_overhead_cycles))),
      macs_(stats().add(TensorEngineStats::macs)),
      matmuls_(stats().add(TensorEngineStats::matmuls)),
      throttled_(stats().add(TensorEngineStats::throttled)) {}

double TensorEngine::ramped_duration(double tau, double work) {
  const auto& r = p_.power_ramp;
  const double a = r.start_fraction, T = r.ramp_time.si;
  if (!r.enabled || T <= 0 || a >= 1 || tau >= T) return work;
  const double r0 = a + (1 - a) * tau / T;       // rate (fraction of peak) at the start
  const double until_full = (T - tau) * (r0 + 1) / 2;  // work done before the ramp ends
  if (work >= until_full) return (T - tau) + (work - until_full);
  const double c2 = (1 - a) / (2 * T);  // work(d) = r0 d + c2 d^2
  return (-r0 + std::sqrt(r0 * r0 + 4 * c2 * work)) / (2 * c2);
}

sc_time TensorEngine::execute(const Instr& in, const sc_time& start, const sc_time& operands) {
  const double clk = p_.clock.si;
  const double rate = macs_per_pe_cycle(p_.macs_per_pe_cycle, in.dtype);
  if (rate <= 0) {
    throw InputError(fmt::format("{}: the Tensor engine does not support {}", name(),
                                 to_string(in.dtype)));
  }
  const double kf = std::max(1.0, std::floor(rate));
  double s = start.to_seconds();
  if (in.new_stationary) {
    // Background LoadStationary: overlaps the previous matmul, exposed only when it is longer.
    const double ls_start = std::max({ls_free_, prev_start_, operands.to_seconds()});
    ls_free_ = ls_start + p_.stationary_load_cycles / clk;
    s = std::max(s, ls_free_);
    const double elem = dtype_bytes(in.dtype);
    sbuf_.count_read(double(in.k) * in.m * elem);
  }
  const double cycles = std::max(double(in.n) * kf / rate, double(p_.matmul_min_ii_cycles));
  // A grouped instruction: the later matmuls' LoadStationary overlaps the one before, exposed
  // only when it is longer (the same rule as between separate instructions).
  const double reps = std::max<std::uint32_t>(1, in.reps);
  const double later = in.new_stationary ? std::max(cycles, double(p_.stationary_load_cycles))
                                         : cycles;
  const double work = (cycles + (reps - 1) * later) / clk;
  if (last_end_ < 0 || s - last_end_ > p_.power_ramp.dip_window.si) ramp_start_ = s;
  const double d = ramped_duration(s - ramp_start_, work);
  throttled_ += d - work;
  last_end_ = s + d;
  prev_start_ = reps > 1 ? last_end_ - later / clk : s;  // start of the last matmul of a group
  if (reps > 1 && in.new_stationary) ls_free_ = std::max(ls_free_, prev_start_);
  const double macs = double(in.k) * in.m * in.n;
  macs_ += macs;
  matmuls_ += reps;
  ActionMeter*& m = mac_meters_.at(std::size_t(in.dtype));
  if (!m) m = &meter(tensor_mac(in.dtype), energy_per_mac(p_.energy_per_mac, in.dtype).si);
  m->count(macs);
  sbuf_.count_read(double(in.k) * in.n * dtype_bytes(in.dtype));
  const double psum_bytes = double(in.m) * in.n * 4;  // FP32 accumulators
  psum_.count_write(psum_bytes * reps);
  psum_.count_read(psum_bytes * (in.accumulate ? reps : reps - 1));
  return sc_time(last_end_, sc_core::SC_SEC);
}

// ------------------------------------------------------------------------------- ElementEngine

ElementEngine::ElementEngine(const sc_core::sc_module_name& name, EngineId id,
                             const config::ElementEngineParams& p, DmaSystem& dma, Sram& sbuf,
                             Sram& psum, std::uint64_t& wakeups)
    : Engine(name, id, dma, wakeups),
      p_(p),
      sbuf_(sbuf),
      psum_(psum),
      elements_(stats().add(ElementEngineStats::elements)),
      action_(id == EngineId::scalar   ? Action::scalar_elements
              : id == EngineId::gpsimd ? Action::gpsimd_elements
                                       : Action::vector_elements) {}

sc_time ElementEngine::execute(const Instr& in, const sc_time& start, const sc_time&) {
  const double epc = in.wide ? p_.elements_per_cycle_32bit : p_.elements_per_cycle_16bit;
  const double cycles = p_.fixed_overhead_cycles +
                        std::ceil(double(in.elements) / epc) * std::max<std::uint32_t>(1, in.inputs);
  elements_ += double(in.elements);
  if (!meter_) meter_ = &meter(action_, p_.energy_per_element.si);
  meter_->count(double(in.elements));
  psum_.count_read(double(in.psum_read));
  sbuf_.count_read(double(in.sbuf_read));
  sbuf_.count_write(double(in.sbuf_write));
  return start + sc_time(cycles / p_.clock.si, sc_core::SC_SEC);
}

}  // namespace trnsim::model
