// SPDX-License-Identifier: MIT
// The rack as the replay engine sees it: the chips of the topology and the fabric between them,
// behind the replay::Machine interface.
#pragma once

#include <systemc>

#include <memory>
#include <string>
#include <vector>

#include "chip/chip.hpp"
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
  Rack(const sc_core::sc_module_name& name, const resolve::RackPlan& plan,
       const config::ReplayParams& replay, const registry::Registry& registry,
       const config::Provenance* prov = nullptr);

  int chip_count() const override { return int(chips_.size()); }
  void compute(int chip, const trace::Op& op) override;
  void reduce(int chip, std::uint64_t bytes, trace::DType dtype) override;
  void transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow) override;
  void start_transfer(int src, int dst, std::uint64_t bytes, std::uint64_t flow,
                      std::function<void()> done) override;
  int local_size() const override { return local_size_; }

  model::Chip& chip(int i) { return *chips_.at(std::size_t(i)); }
  model::Network& network() { return *network_; }

  // Substitutions made because the chip lacks a data type ("mxfp8 ran as fp8"), for the report.
  const std::vector<std::string>& notes() const { return notes_; }
  // Latency of every fabric transfer's last packet, and of every transfer, in seconds.
  const std::vector<double>& packet_latencies() const { return packet_latency_; }
  const std::vector<double>& transfer_latencies() const { return transfer_latency_; }
  double hbm_bytes() const { return hbm_bytes_; }
  const std::vector<TransferSample>& transfer_samples() const { return transfers_; }
  // Called after every op, reduction and transfer completes (the report's samples): it must
  // only read, and never wait. Observing this way adds no events, so results cannot move.
  void set_observer(std::function<void()> f) { observer_ = std::move(f); }

 private:
  model::Dtype chip_dtype(trace::DType d);
  model::TransferRequest request(int src, int dst, std::uint64_t bytes, std::uint64_t flow) const;
  void record(const model::TransferRecord& rec);

  // Runs `f` on chip `c` once one of its op slots is free (/replay/chip_op_slots).
  template <class F>
  void in_slot(int c, F&& f);
  struct Slots {
    int free = 0;
    std::uint64_t next_ticket = 0, serving = 0;  // waiters are admitted in ticket order
    sc_core::sc_event changed;
  };

  config::ChipParams chip_params_;
  std::vector<std::unique_ptr<model::Chip>> chips_;
  std::vector<std::unique_ptr<Slots>> slots_;
  std::unique_ptr<model::Network> network_;
  int local_size_ = 0;
  model::ActivityCounter activity_;
  std::vector<std::string> notes_;
  std::vector<double> packet_latency_, transfer_latency_;
  std::vector<TransferSample> transfers_;
  std::function<void()> observer_;
  double hbm_bytes_ = 0;
  std::uint64_t capacity_ = 0;
};

}  // namespace trnsim::run
