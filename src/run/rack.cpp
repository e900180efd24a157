// SPDX-License-Identifier: MIT
#include "rack.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "common/activity.hpp"
#include "compute_ops.hpp"
#include "trnsim/error.hpp"

namespace trnsim::run {

Rack::Rack(const sc_core::sc_module_name& name, const resolve::RackPlan& plan,
           const config::ReplayParams& replay, const registry::Registry& registry,
           const config::Provenance* prov, std::shared_ptr<const model::OpTable> calibration,
           const std::vector<int>& hosted)
    : sc_core::sc_module(name), chip_params_(plan.chip.params) {
  // An unfolded cluster has every UltraServer, each with its own fabric on the same topology.
  per_us_ = plan.topology.chip_count();
  const std::size_t copies = std::size_t(plan.simulated_ultraservers);
  std::vector<model::MemoryPort*> memories;
  // The threads that run core programs, shared by all the chips (/sim/core_workers, chip.cpp).
  auto workers = std::make_shared<model::CoreWorkerBudget>();
  workers->limit = plan.chip.core_workers;
  const std::size_t total = per_us_ * copies;
  std::vector<bool> hosts(total, hosted.empty());
  for (int c : hosted) hosts.at(std::size_t(c)) = true;
  std::uint64_t idle_unbuilt = 0, stand_in_cores = 0;
  for (std::size_t c = 0; c < total; ++c) {
    const bool stand_in = !hosts[c] && stand_in_ < 0;
    if (hosts[c] || stand_in) {
      const std::uint64_t cores_before = workers->cores;
      chips_.push_back(registry::make_chip(registry, fmt::format("chip{}", c).c_str(), plan.chip,
                                           prov, nullptr, calibration, workers));
      ++chips_built_;
      memories.push_back(&chips_.back()->memory());
      if (stand_in) {
        stand_in_ = int(c);
        stand_in_cores = workers->cores - cores_before;
      }
    } else {
      chips_.push_back(nullptr);  // the fabric never reads or writes its memory
      memories.push_back(nullptr);
      ++idle_unbuilt;
    }
    if (replay.chip_op_slots > 0) {  // 0: no limit, no slots
      slots_.push_back(std::make_unique<Slots>());
      slots_.back()->free = replay.chip_op_slots;
    }
  }
  // The chips not built still share the core workers' budget as if they were.
  workers->cores += idle_unbuilt * stand_in_cores;
  for (std::size_t u = 0; u < copies; ++u) {
    const std::vector<model::MemoryPort*> mine(memories.begin() + std::ptrdiff_t(u * per_us_),
                                               memories.begin() + std::ptrdiff_t((u + 1) * per_us_));
    const std::string net_name = u == 0 ? std::string("fabric") : fmt::format("fabric_us{}", u);
    networks_.push_back(
        registry::make_network(registry, net_name.c_str(), plan.topology, plan.fabric, mine, prov));
  }
  registry::check_core_workers(*workers, prov);
  network_ = networks_.front().get();
  straggler_chip_ = plan.straggler_chip;
  straggler_slowdown_ = plan.straggler_slowdown;
  // The scale-out network (docs/scaling.md): as one replica sees it when folded (the registry's
  // scale_out role, /cluster/scale_out), the whole of it otherwise.
  if (plan.folded) {
    folded_ = plan.folded;
    scale_out_ = registry::make_scale_out(registry, "scale_out", folded_->topology(),
                                          plan.scale_out_fabric, memories, prov);
  } else if (plan.scale_out_topology) {
    // Unfolded, the network model the rack's fabric has (flow or packet), for comparing them.
    scale_out_topology_ = plan.scale_out_topology;
    scale_out_net_ = registry::make_network(registry, "scale_out", *scale_out_topology_,
                                            plan.fabric, memories, prov);
  }
  const auto& hbm = plan.chip.params.hbm;
  capacity_ = std::uint64_t(hbm.capacity_per_stack.si) * std::uint64_t(hbm.stacks);

  // The shape collectives plan on: one-hop chip neighbours where chips are joined directly
  // (torus, explicit graphs), servers where they meet in switches.
  const topo::Topology& t = plan.topology;
  shape_.cache = std::make_shared<replay::CycleCache>();
  shape_.torus_dims = t.torus_dims();
  const bool switched =
      t.generator() == topo::Generator::two_level || t.generator() == topo::Generator::folded_clos;
  shape_.switched = switched;
  shape_.tier_chips = switched ? t.first_tier_chips() : 0;
  if (!switched) {
    shape_.neighbours.resize(t.chip_count() * copies);
    for (std::size_t u = 0; u < copies; ++u) {
      const int off = int(u * per_us_);
      for (const auto& l : t.links()) {
        const auto& a = t.node(l.a);
        const auto& b = t.node(l.b);
        if (!a.chip || !b.chip || a.chip == b.chip) continue;
        shape_.neighbours[std::size_t(off) + a.chip->v].push_back(off + int(b.chip->v));
        shape_.neighbours[std::size_t(off) + b.chip->v].push_back(off + int(a.chip->v));
      }
    }
    for (auto& nb : shape_.neighbours) {
      std::sort(nb.begin(), nb.end());
      nb.erase(std::unique(nb.begin(), nb.end()), nb.end());
    }
  }
  const auto& cp = plan.chip.params;
  const int dma_cores = replay.collectives.collective_dma_cores > 0
                            ? std::min(replay.collectives.collective_dma_cores, cp.cores)
                            : cp.cores;
  coll_dma_rate_ = double(dma_cores) * double(cp.core.dma.engines) * cp.core.dma.engine_bandwidth.si;
  coll_dma_free_.assign(chips_.size(), sc_core::SC_ZERO_TIME);
  SC_HAS_PROCESS(Rack);
  SC_METHOD(fire);
  sensitive << timer_ev_;
  dont_initialize();
}

Rack::~Rack() = default;

model::ChipModel& Rack::chip(int i) {
  auto& c = chips_.at(std::size_t(i));
  if (!c) throw InternalError(fmt::format("rack: chip {} hosts no rank and was not built", i));
  return *c;
}

const model::ChipModel& Rack::chip_or_stand_in(int i) const {
  const auto& c = chips_.at(std::size_t(i));
  return c ? *c : *chips_.at(std::size_t(stand_in_));
}

std::vector<model::NamedBlock> Rack::all_blocks() const {
  // The chips are the rack's first children (built first); the rest follow them.
  std::vector<const sc_core::sc_object*> kids;
  for (std::size_t c = 0; c < chips_.size(); ++c) kids.push_back(&chip_or_stand_in(int(c)));
  const std::unordered_set<const sc_core::sc_object*> chip_kids(kids.begin(), kids.end());
  for (const sc_core::sc_object* o : get_child_objects()) {
    if (!chip_kids.count(o)) kids.push_back(o);
  }
  const auto& tops = sc_core::sc_get_top_level_objects();
  if (std::find(tops.begin(), tops.end(), this) == tops.end()) {
    throw InternalError("Rack::all_blocks: the rack is not a top-level module");
  }
  std::vector<model::NamedBlock> out;
  const auto add_under = [&out](const sc_core::sc_object* root, const std::string& from,
                                const std::string& to) {
    for (const model::Block* b : model::blocks_under(root)) {
      std::string n = b->name();
      if (from != to) n = to + n.substr(from.size());
      out.push_back({b, std::move(n)});
    }
  };
  for (const sc_core::sc_object* top : tops) {
    if (top != this) {
      add_under(top, "", "");
      continue;
    }
    for (std::size_t k = 0; k < kids.size(); ++k) {
      const std::string from = kids[k]->name();
      add_under(kids[k], from,
                k < chips_.size() ? fmt::format("{}.chip{}", name(), k) : from);
    }
  }
  return out;
}

replay::GroupLayout Rack::layout(const std::vector<int>& chips) const {
  replay::GroupLayout g = shape_;
  g.chip = chips;
  return g;
}

void Rack::at(sc_core::sc_time t, std::function<void()> f) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  timers_.emplace(t, std::move(f));
  timer_ev_.notify(timers_.begin()->first - now);  // an earlier pending notification wins
}

void Rack::fire() {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  while (!timers_.empty() && timers_.begin()->first <= now) {
    auto f = std::move(timers_.begin()->second);
    timers_.erase(timers_.begin());
    f();
  }
  if (!timers_.empty()) timer_ev_.notify(timers_.begin()->first - now);
}

sc_core::sc_time Rack::local_copy_done(int c, std::uint64_t bytes, std::uint64_t flow) {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  auto& free = coll_dma_free_.at(std::size_t(c));
  const sc_core::sc_time start = std::max(free, now);
  free = start + sc_core::sc_time(double(bytes) / coll_dma_rate_, sc_core::SC_SEC);
  const model::TransferRequest r = request(c, c, bytes, flow);
  auto& mem = chips_.at(std::size_t(c))->memory();
  const sc_core::sc_time rd = mem.access({r.src_addr, bytes, false});
  const sc_core::sc_time wr = mem.access({r.dst_addr, bytes, true});
  hbm_bytes_ += 2.0 * double(bytes);
  return std::max({free, rd, wr});
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

namespace {

// The name an op's stats carry: a reference, not `empty ? "op" : op.name` (a copy of the name,
// an allocation per op when it is longer than the short-string buffer).
const std::string& stats_name(const trace::Op& op) {
  static const std::string unnamed = "op";
  return op.name.empty() ? unnamed : op.name;
}

}  // namespace

void Rack::compute(int chip, const trace::Op& op) {
  const auto cop = to_compute_op(op, chip_params_, notes_);
  if (!cop) return;
  in_slot(chip, [&] {
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    const model::OpStats s =
        chips_.at(std::size_t(chip))->execute(*cop, stats_name(op));
    hbm_bytes_ += s.hbm_bytes;
    if (chip == straggler_chip_) {  // what-if: the slow chip holds the op that much longer
      model::wait_counted(activity_, (sc_core::sc_time_stamp() - t0) * (straggler_slowdown_ - 1));
    }
    if (observer_) observer_();
  });
}

void Rack::fast_compute(int chip, const trace::Op& op, const trace::Op& counterpart,
                        const sc_core::sc_time& duration) {
  const auto cop = to_compute_op(op, chip_params_, notes_);
  if (!cop) return;
  const auto ccp = to_compute_op(counterpart, chip_params_, notes_);
  const model::OpStats s = chips_.at(std::size_t(chip))->fast_forward(
      *cop, ccp ? *ccp : *cop, stats_name(op), duration);
  hbm_bytes_ += s.hbm_bytes;
  if (observer_) observer_();
}

sc_core::sc_time Rack::reduce_done(int chip, std::uint64_t bytes) {
  // On the collective DMA engines: read the received and the local operand, write the sum.
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  auto& free = coll_dma_free_.at(std::size_t(chip));
  const sc_core::sc_time start = std::max(free, now);
  free = start + sc_core::sc_time(2.0 * double(bytes) / coll_dma_rate_, sc_core::SC_SEC);
  const std::uint64_t half = capacity_ / 2;
  const std::uint64_t span = half > bytes ? half - bytes : 1;
  const std::uint64_t addr = half + (reductions_++ * 1048576ULL) % span / 4096 * 4096;
  auto& mem = chips_.at(std::size_t(chip))->memory();
  const sc_core::sc_time rd = mem.access({addr, 2 * bytes, false});
  const sc_core::sc_time wr = mem.access({addr, bytes, true});
  hbm_bytes_ += 3.0 * double(bytes);
  return std::max({free, rd, wr});
}

void Rack::reduce(int chip, std::uint64_t bytes, trace::DType) {
  if (bytes == 0) return;
  const sc_core::sc_time done = reduce_done(chip, bytes);
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  if (done > now) model::wait_counted(activity_, done - now);
  if (observer_) observer_();
}

void Rack::start_reduce(int chip, std::uint64_t bytes, trace::DType,
                        std::function<void()> done) {
  if (bytes == 0) {
    at(sc_core::sc_time_stamp(), std::move(done));
    return;
  }
  at(reduce_done(chip, bytes), std::move(done));
}

model::TransferRequest Rack::request(int src, int dst, std::uint64_t bytes,
                                     std::uint64_t flow) const {
  model::TransferRequest r;
  r.src = topo::ChipId{std::uint32_t(src)};
  r.dst = topo::ChipId{std::uint32_t(dst)};
  r.bytes = bytes;
  r.flow = flow;
  r.pattern = pattern_;
  // Communication buffers live in the upper half of HBM, spread by flow so that concurrent
  // transfers do not all open the same rows.
  const std::uint64_t half = capacity_ / 2;
  const std::uint64_t span = half > bytes ? half - bytes : 1;
  r.src_addr = half + (flow * 1048576ULL) % span / 4096 * 4096;
  r.dst_addr = half + ((flow >> 17) * 1048576ULL) % span / 4096 * 4096;
  return r;
}

model::Network& Rack::route(model::TransferRequest& r) const {
  const std::size_t su = r.src.v / per_us_, du = r.dst.v / per_us_;
  if (su != du) {
    if (!scale_out_net_) {
      throw InternalError(fmt::format("transfer {} -> {} between UltraServers without a scale-out "
                                      "network",
                                      r.src.v, r.dst.v));
    }
    return *scale_out_net_;  // global chip ids
  }
  r.src = topo::ChipId{std::uint32_t(r.src.v % per_us_)};
  r.dst = topo::ChipId{std::uint32_t(r.dst.v % per_us_)};
  return *networks_[su];
}

std::vector<model::Network*> Rack::networks() const {
  std::vector<model::Network*> out;
  for (const auto& n : networks_) out.push_back(n.get());
  if (scale_out_) out.push_back(scale_out_.get());
  if (scale_out_net_) out.push_back(scale_out_net_.get());
  return out;
}

std::vector<model::Network*> Rack::fabric_model_networks() const {
  std::vector<model::Network*> out;
  for (const auto& n : networks_) out.push_back(n.get());
  if (scale_out_net_) out.push_back(scale_out_net_.get());
  return out;
}

void Rack::record(const model::TransferRecord& rec, int src, int dst, replay::SentTogether message) {
  transfer_latency_.push_back(rec.latency().si);
  packet_latency_.push_back(rec.last_packet.total.si);
  const TransferSample sample{src, dst, rec.request.bytes, rec.packets,
                              std::max<std::uint32_t>(1, rec.request.pieces), rec.latency().si};
  if (message.id == 0 || message.transfers <= 1) {
    transfers_.push_back(sample);
  } else {
    // Pieces sent together that the packet fabric carries as one transfer each: one sample from
    // their issue to the last one's arrival, as the flow network's one transfer gives it.
    auto [it, first] = open_messages_.try_emplace(message.id);
    OpenMessage& m = it->second;
    if (first) {
      m.sample = sample;
      m.issued = rec.issued;
      m.completed = rec.completed;
    } else {
      m.sample.bytes += sample.bytes;
      m.sample.packets += sample.packets;
      m.sample.pieces += sample.pieces;
      m.issued = std::min(m.issued, rec.issued);
      m.completed = std::max(m.completed, rec.completed);
    }
    if (++m.arrived == message.transfers) {
      m.sample.latency_s = (m.completed - m.issued).to_seconds();
      transfers_.push_back(m.sample);
      open_messages_.erase(it);
    }
  }
  hbm_bytes_ += 2.0 * double(rec.request.bytes);  // read at the source, written at the destination
  if (observer_) observer_();
}

std::function<void(const model::TransferRecord&)> Rack::recorded(std::function<void()> done,
                                                                 int src, int dst) {
  return [this, done = std::move(done), src, dst,
          message = message_](const model::TransferRecord& rec) {
    record(rec, src, dst, message);
    done();
  };
}

void Rack::transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow) {
  if (src == dst) {
    const sc_core::sc_time done = local_copy_done(src, bytes, flow);
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (done > now) model::wait_counted(activity_, done - now);
    return;
  }
  model::TransferRequest r = request(src, dst, bytes, flow);
  const model::TransferHandle h = folded_ && !same_ultraserver(src, dst)
                                      ? scale_out_->start_on_path(r, folded_->path(src, 0, dst))
                                      : route(r).start(r);
  if (!h.done()) model::wait_counted(activity_, h.done_event());
  record(h.record(), src, dst, {});
}

void Rack::start_transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow,
                          std::function<void()> done) {
  start_pieces(src, dst, bytes, 1, flow, std::move(done), {});
}

void Rack::start_pieces(int src, int dst, std::uint64_t bytes, std::uint32_t pieces,
                        std::uint64_t flow, std::function<void()> done,
                        std::function<void(std::uint32_t)> arrived) {
  if (src == dst) {
    at(local_copy_done(src, bytes, flow), std::move(done));
    return;
  }
  model::TransferRequest r = request(src, dst, bytes, flow);
  r.pieces = pieces;
  auto on_done = recorded(std::move(done), src, dst);
  const model::TransferHandle h =
      folded_ && !same_ultraserver(src, dst)  // inside a replica of several UltraServers
          ? scale_out_->start_on_path(r, folded_->path(src, 0, dst), std::move(on_done))
          : route(r).start(r, std::move(on_done));
  if (arrived && pieces > 1) h.on_pieces(std::move(arrived));
}

void Rack::start_replica_transfer(int src, int dst, int distance, std::uint64_t bytes,
                                  std::uint32_t pieces, std::uint64_t flow,
                                  std::function<void()> done,
                                  std::function<void(std::uint32_t)> arrived) {
  if (!scale_out_) {
    Machine::start_replica_transfer(src, dst, distance, bytes, pieces, flow, std::move(done),
                                    std::move(arrived));
    return;
  }
  model::TransferRequest r = request(src, dst, bytes, flow);
  r.pieces = pieces;
  const model::TransferHandle h = scale_out_->start_on_path(
      r, folded_->path(src, distance * folded_->per_replica(), dst),
      recorded(std::move(done), src, dst));
  if (arrived && pieces > 1) h.on_pieces(std::move(arrived));
}

void Rack::account_transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow) {
  if (src == dst) return;
  ++messages_accounted_;  // a message of the workload, whether or not a network charges it
  if (folded_ && !same_ultraserver(src, dst)) return;  // not charged folded
  model::TransferRequest r = request(src, dst, bytes, flow);
  route(r).account(r);
}

}  // namespace trnsim::run
