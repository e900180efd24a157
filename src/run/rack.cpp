// SPDX-License-Identifier: MIT
#include "rack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/activity.hpp"
#include "trnsim/error.hpp"

namespace trnsim::run {

namespace {

model::ElementKind element_kind(trace::OpKind k) {
  switch (k) {
    case trace::OpKind::activation: return model::ElementKind::activation;
    case trace::OpKind::reduction: return model::ElementKind::reduction;
    case trace::OpKind::softmax: return model::ElementKind::softmax;
    case trace::OpKind::norm: return model::ElementKind::norm;
    default: return model::ElementKind::elementwise;
  }
}

}  // namespace

Rack::Rack(const sc_core::sc_module_name& name, const resolve::RackPlan& plan,
           const config::ReplayParams& replay, const registry::Registry& registry,
           const config::Provenance* prov)
    : sc_core::sc_module(name), chip_params_(plan.chip.params) {
  std::vector<model::MemoryPort*> memories;
  for (std::size_t c = 0; c < plan.topology.chip_count(); ++c) {
    chips_.push_back(
        registry::make_chip(registry, fmt::format("chip{}", c).c_str(), plan.chip, prov));
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

model::Dtype Rack::chip_dtype(trace::DType d) {
  const model::Dtype want = d;
  const auto& rates = chip_params_.core.tensor.macs_per_pe_cycle;
  if (model::macs_per_pe_cycle(rates, want) > 0) return want;
  // The chip lacks this type: run it as the nearest type it has, and say so in the report.
  for (model::Dtype alt : {model::Dtype::mxfp8, model::Dtype::fp8, model::Dtype::bf16}) {
    if (model::macs_per_pe_cycle(rates, alt) > 0) {
      const std::string note = fmt::format("{} has no {}: those ops ran as {}", chip_params_.name,
                                           model::to_string(want), model::to_string(alt));
      if (std::find(notes_.begin(), notes_.end(), note) == notes_.end()) notes_.push_back(note);
      return alt;
    }
  }
  throw ConfigError(fmt::format("{} supports none of mxfp8, fp8, bf16", chip_params_.name));
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
  using K = trace::OpKind;
  model::ComputeOp cop;
  switch (op.kind) {
    case K::gemm:
      cop = model::GemmOp{op.m, op.k, op.n, chip_dtype(op.dtype), op.batch};
      break;
    case K::attention:
      // A causal mask halves the score and value work: model it as half the keys.
      cop = model::AttentionOp{op.batch, op.heads, op.seq_q,
                               op.causal ? std::max<std::uint64_t>(1, op.seq_kv / 2) : op.seq_kv,
                               op.head_dim, chip_dtype(op.dtype)};
      break;
    case K::mem_load:
    case K::mem_store:
      cop = model::MemcpyOp{op.bytes};
      break;
    default: {
      // Element-wise families. Ops known only by their work (Chakra num_ops) carry `flops`: a
      // matmul ("M") becomes a cube GEMM of the same work, anything else that many element ops.
      // A Chakra matmul (op_type "M") arrives as element-wise work with its num_ops as the
      // element count; run it as a GEMM, or a 10240^3 matmul becomes 10^12 element operations.
      if (op.source_type && *op.source_type == "M" && op.flops && *op.flops > 0) {
        const auto side = std::uint64_t(std::max(1.0, std::round(std::cbrt(*op.flops / 2))));
        cop = model::GemmOp{side, side, side, chip_dtype(op.dtype), 1};
        break;
      }
      std::uint64_t elements = op.elements;
      if (elements == 0 && op.flops && *op.flops > 0) elements = std::uint64_t(*op.flops);
      if (elements == 0) return;
      cop = model::ElementOp{element_kind(op.kind), elements, model::parse_dtype(
                                                                  config::enum_name(op.dtype)),
                             int(std::max<std::uint64_t>(1, op.kind == K::elementwise ? op.inputs : 1))};
    }
  }
  in_slot(chip, [&] {
    const model::OpStats s =
        chips_.at(std::size_t(chip))->execute(cop, op.name.empty() ? "op" : op.name);
    hbm_bytes_ += s.hbm_bytes;
    if (observer_) observer_();
  });
}

void Rack::reduce(int chip, std::uint64_t bytes, trace::DType dtype) {
  const model::Dtype d = dtype;
  const auto elements = std::uint64_t(std::ceil(double(bytes) / model::dtype_bytes(d)));
  if (elements == 0) return;
  in_slot(chip, [&] {
    const auto s = chips_.at(std::size_t(chip))
                       ->execute(model::ElementOp{model::ElementKind::elementwise, elements, d, 2},
                                 "reduce");
    hbm_bytes_ += s.hbm_bytes;
    if (observer_) observer_();
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
  transfers_.push_back({int(rec.request.src.v), int(rec.request.dst.v), rec.request.bytes,
                        rec.packets, rec.latency().si});
  hbm_bytes_ += 2.0 * double(rec.request.bytes);  // read at the source, written at the destination
  if (observer_) observer_();
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
