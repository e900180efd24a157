// SPDX-License-Identifier: MIT
// The rack as the replay engine sees it: the chips of the topology and the fabric between them,
// behind the replay::Machine interface.
#pragma once

#include <systemc>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chip/chip_model.hpp"
#include "chip/op_profile.hpp"
#include "common/network.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/config/config.hpp"
#include "trnsim/replay/engine.hpp"
#include "trnsim/run/run.hpp"
#include "trnsim/topology/topology.hpp"

namespace trnsim::run {

class Rack : public sc_core::sc_module, public replay::Machine {
 public:
  // Chips and network of `plan`, built through `registry`; `plan` must outlive the rack.
  // `calibration`: the profiles of the op-level compute model, when the plan names it.
  // `hosted`: the chips that host a rank (sorted, unique; empty: all). Only they are built as
  // chip models, and one idle chip besides (the first), which stands for every other idle chip
  // in the report: idle chips are alike, nothing runs on or reaches their memory, and the
  // fabric's ports and routers of every chip are built all the same (the network's own).
  Rack(const sc_core::sc_module_name& name, const resolve::RackPlan& plan,
       const config::ReplayParams& replay, const registry::Registry& registry,
       const config::Provenance* prov = nullptr,
       std::shared_ptr<const model::OpTable> calibration = nullptr,
       const std::vector<int>& hosted = {});
  ~Rack() override;

  int chip_count() const override { return int(chips_.size()); }
  void compute(int chip, const trace::Op& op) override;
  // The op on its chip from the calibration (ChipModel::fast_forward), `duration` scaled by the
  // two ops' calibrated times (their sizes may differ within /sim/fast_forward_size_tolerance);
  // holds no op slot, since `duration` already contains the counterpart's wait for one.
  void fast_compute(int chip, const trace::Op& op, const trace::Op& counterpart,
                    const sc_core::sc_time& duration) override;
  void reduce(int chip, std::uint64_t bytes, trace::DType dtype) override;
  void start_reduce(int chip, std::uint64_t bytes, trace::DType dtype,
                    std::function<void()> done) override;
  void transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow) override;
  void start_transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow,
                      std::function<void()> done) override;
  replay::GroupLayout layout(const std::vector<int>& chips) const override;
  void account_transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow) override;
  bool merges_pieces() const override { return network_->merges_pieces(); }
  void set_pattern(std::uint8_t pattern) override { pattern_ = pattern; }
  void set_message(replay::SentTogether pieces) override { message_ = pieces; }
  void start_replica_transfer(int src, int dst, int distance, std::uint64_t bytes,
                              std::uint32_t pieces, std::uint64_t flow,
                              std::function<void()> done,
                              std::function<void(std::uint32_t)> arrived) override;
  void start_pieces(int src, int dst, std::uint64_t bytes, std::uint32_t pieces, std::uint64_t flow,
                    std::function<void()> done,
                    std::function<void(std::uint32_t)> arrived) override;

  // Chip `i`; InternalError for a chip that was not built (see built()).
  model::ChipModel& chip(int i);
  bool built(int i) const { return chips_.at(std::size_t(i)) != nullptr; }
  // Chip `i`, or the idle chip that stands for it when it was not built.
  const model::ChipModel& chip_or_stand_in(int i) const;
  // How many chip models were elaborated (of chip_count()).
  int chips_built() const { return chips_built_; }
  // Every block of the simulation in the order model::collect_stats()/collect_energy() visit
  // them had every chip been built: each chip not built is its stand-in's blocks, renamed.
  std::vector<model::NamedBlock> all_blocks() const;
  // The first UltraServer's fabric; networks(): every UltraServer's, then the scale-out network.
  model::Network& network() { return *network_; }
  std::vector<model::Network*> networks() const;
  // Those of them built from the fabric's model (/rack/fabric/model): every UltraServer's and
  // an unfolded cluster's scale-out network, not the folded scale-out network.
  std::vector<model::Network*> fabric_model_networks() const;

  // Substitutions made because the chip lacks a data type ("mxfp8 ran as fp8"), for the report.
  const std::vector<std::string>& notes() const { return notes_; }
  // Latency of every fabric transfer's last packet, and of every transfer, in seconds.
  const std::vector<double>& packet_latencies() const { return packet_latency_; }
  const std::vector<double>& transfer_latencies() const { return transfer_latency_; }
  double hbm_bytes() const { return hbm_bytes_; }
  const std::vector<TransferSample>& transfer_samples() const { return transfers_; }
  // Fabric messages that account_transfer() charged instead of simulating (src != dst).
  std::uint64_t messages_accounted() const { return messages_accounted_; }
  // Called after every op, reduction and transfer completes (the report's samples): it must
  // only read, and never wait. Observing this way adds no events, so results cannot move.
  void set_observer(std::function<void()> f) { observer_ = std::move(f); }

 private:
  model::TransferRequest request(int src, int dst, std::uint64_t bytes, std::uint64_t flow) const;
  std::uint8_t pattern_ = 0;  // of the transfers started now (set_pattern)
  // The pieces sent together that the transfers started now carry (set_message), and those
  // carried by more than one transfer whose transfers have not all arrived, by id.
  struct OpenMessage {
    std::uint32_t arrived = 0;
    TransferSample sample;
    sc_core::sc_time issued, completed;
  };
  replay::SentTogether message_;
  std::unordered_map<std::uint64_t, OpenMessage> open_messages_;
  // Counts a completed transfer; the sample of the pieces sent with it is kept when the last
  // transfer that carries them arrives.
  void record(const model::TransferRecord& rec, int src, int dst, replay::SentTogether message);
  // The completion callback of a transfer from `src` to `dst` started now: records it with the
  // pieces it carries (message_ as set now), then runs `done`.
  std::function<void(const model::TransferRecord&)> recorded(std::function<void()> done, int src,
                                                            int dst);
  // The network between two chips (global ids): their UltraServer's fabric, with the request's
  // ids made local to it, or the scale-out network between UltraServers.
  model::Network& route(model::TransferRequest& r) const;
  bool same_ultraserver(int a, int b) const {
    return std::size_t(a) / per_us_ == std::size_t(b) / per_us_;
  }
  // When a copy of `bytes` within chip `c` (ranks on one chip: HBM to HBM on the collective DMA
  // engines, never the fabric) is done, reserving the engines and the memory from now.
  sc_core::sc_time local_copy_done(int c, std::uint64_t bytes, std::uint64_t flow);
  // When a reduction of `bytes` on chip `c` is done, reserving the engines and the memory.
  sc_core::sc_time reduce_done(int c, std::uint64_t bytes);
  // Runs `f` at `t` (>= now) from the timer method; equal times run in the order added.
  void at(sc_core::sc_time t, std::function<void()> f);
  void fire();

  // Runs `f` on chip `c` once one of its op slots is free (/replay/chip_op_slots).
  template <class F>
  void in_slot(int c, F&& f);
  struct Slots {
    int free = 0;
    std::uint64_t next_ticket = 0, serving = 0;  // waiters are admitted in ticket order
    sc_core::sc_event changed;
  };

  config::ChipParams chip_params_;
  std::vector<std::unique_ptr<model::ChipModel>> chips_;  // null: not built
  int stand_in_ = -1;  // the idle chip built for the others, -1 when none is idle
  int chips_built_ = 0;
  std::vector<std::unique_ptr<Slots>> slots_;
  std::vector<std::unique_ptr<model::Network>> networks_;  // one per simulated UltraServer
  model::Network* network_ = nullptr;
  std::size_t per_us_ = 0;  // chips per UltraServer
  int straggler_chip_ = -1;  // /cluster/straggler: the slow chip, -1 for none
  double straggler_slowdown_ = 1;
  // Folded clusters: the scale-out network one replica sees (plan.folded), flow-level.
  std::shared_ptr<const topo::FoldedScaleOut> folded_;
  std::shared_ptr<const topo::Topology> scale_out_topology_;  // unfolded clusters
  std::unique_ptr<model::Network> scale_out_net_;             // on it, the fabric's model
  std::unique_ptr<model::PathNetwork> scale_out_;             // folded (registry scale_out)
  replay::GroupLayout shape_;  // the rack's shape for collectives (no member chips)
  // Per chip: when its collective DMA engines are next free, and their bandwidth (bytes/s read).
  std::vector<sc_core::sc_time> coll_dma_free_;
  double coll_dma_rate_ = 0;
  std::multimap<sc_core::sc_time, std::function<void()>> timers_;
  sc_core::sc_event timer_ev_;
  model::ActivityCounter activity_;
  std::vector<std::string> notes_;
  std::vector<double> packet_latency_, transfer_latency_;
  std::vector<TransferSample> transfers_;
  std::uint64_t messages_accounted_ = 0;
  std::function<void()> observer_;
  double hbm_bytes_ = 0;
  std::uint64_t capacity_ = 0;
  std::uint64_t reductions_ = 0;  // spreads reduction buffers over HBM rows
};

}  // namespace trnsim::run
