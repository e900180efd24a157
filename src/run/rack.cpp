// SPDX-License-Identifier: MIT
#include "rack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/activity.hpp"
#include "compute_ops.hpp"
#include "trnsim/error.hpp"

namespace trnsim::run {

Rack::Rack(const sc_core::sc_module_name& name, const resolve::RackPlan& plan,
           const config::ReplayParams& replay, const registry::Registry& registry,
           const config::Provenance* prov, std::shared_ptr<const model::OpTable> calibration)
    : sc_core::sc_module(name), chip_params_(plan.chip.params) {
  std::vector<model::MemoryPort*> memories;
  for (std::size_t c = 0; c < plan.topology.chip_count(); ++c) {
    chips_.push_back(
        registry::make_chip(registry, fmt::format("chip{}", c).c_str(), plan.chip, prov, nullptr,
                            calibration));
    if (replay.chip_op_slots > 0) {  // 0: no limit, no slots
      slots_.push_back(std::make_unique<Slots>());
      slots_.back()->free = replay.chip_op_slots;
    }
    memories.push_back(&chips_.back()->memory());
  }
  network_ = registry::make_network(registry, "fabric", plan.topology, plan.fabric, memories, prov);
  local_size_ = plan.local_size;
  const auto& hbm = plan.chip.params.hbm;
  capacity_ = std::uint64_t(hbm.capacity_per_stack.si) * std::uint64_t(hbm.stacks);
}

template <class F>
void Rack::in_slot(int c, F&& f) {
  if (slots_.empty()) {
    f();
    return;
  }
  Slots& s = *slots_.at(std::size_t(c));
  const std::uint64_t ticket = s.next_ticket++;
  while (ticket != s.serving || s.free == 0) model::wait_counted(activity_, s.changed);
  --s.free;
  ++s.serving;
  s.changed.notify(sc_core::SC_ZERO_TIME);  // the next ticket may also find a free slot
  f();
  ++s.free;
  s.changed.notify(sc_core::SC_ZERO_TIME);
}

void Rack::compute(int chip, const trace::Op& op) {
  const auto cop = to_compute_op(op, chip_params_, notes_);
  if (!cop) return;
  in_slot(chip, [&] {
    const model::OpStats s =
        chips_.at(std::size_t(chip))->execute(*cop, op.name.empty() ? "op" : op.name);
    hbm_bytes_ += s.hbm_bytes;
  });
}

void Rack::reduce(int chip, std::uint64_t bytes, trace::DType dtype) {
  const auto op = reduce_op(bytes, dtype);
  if (!op) return;
  in_slot(chip, [&] {
    const auto s = chips_.at(std::size_t(chip))->execute(*op, "reduce");
    hbm_bytes_ += s.hbm_bytes;
  });
}

model::TransferRequest Rack::request(int src, int dst, std::uint64_t bytes,
                                     std::uint64_t flow) const {
  model::TransferRequest r;
  r.src = topo::ChipId{std::uint32_t(src)};
  r.dst = topo::ChipId{std::uint32_t(dst)};
  r.bytes = bytes;
  r.flow = flow;
  // Communication buffers live in the upper half of HBM, spread by flow so that concurrent
  // transfers do not all open the same rows.
  const std::uint64_t half = capacity_ / 2;
  const std::uint64_t span = half > bytes ? half - bytes : 1;
  r.src_addr = half + (flow * 1048576ULL) % span / 4096 * 4096;
  r.dst_addr = half + ((flow >> 17) * 1048576ULL) % span / 4096 * 4096;
  return r;
}

void Rack::record(const model::TransferRecord& rec) {
  transfer_latency_.push_back(rec.latency().si);
  packet_latency_.push_back(rec.last_packet.total.si);
  hbm_bytes_ += 2.0 * double(rec.request.bytes);  // read at the source, written at the destination
}

void Rack::transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow) {
  const model::TransferHandle h = network_->start(request(src, dst, bytes, flow));
  if (!h.done()) model::wait_counted(activity_, h.done_event());
  record(h.record());
}

void Rack::start_transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow,
                          std::function<void()> done) {
  network_->start(request(src, dst, bytes, flow),
                 [this, done = std::move(done)](const model::TransferRecord& rec) {
                   record(rec);
                   done();
                 });
}

}  // namespace trnsim::run
