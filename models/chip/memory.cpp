// SPDX-License-Identifier: MIT
#include "chip/memory.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace trnsim::model {

using sc_core::sc_time;

int hbm_stack_of(const config::HbmParams& p, std::uint64_t addr) {
  const auto il = std::uint64_t(p.interleave_bytes.si);
  return int((addr / il) % std::uint64_t(p.stacks));
}

namespace {

// Bytes of [addr, addr+bytes) per stack.
std::vector<std::uint64_t> split_by_stack(const config::HbmParams& p, std::uint64_t addr,
                                          std::uint64_t bytes) {
  std::vector<std::uint64_t> per(std::size_t(p.stacks), 0);
  const auto il = std::uint64_t(p.interleave_bytes.si);
  std::uint64_t a = addr;
  const std::uint64_t end = addr + bytes;
  // Whole interleave rounds give every stack the same share; walk only the remainder.
  const std::uint64_t round = il * std::uint64_t(p.stacks);
  if (bytes >= 2 * round) {
    const std::uint64_t first = (a + round - 1) / round * round;
    const std::uint64_t rounds = (end - first) / round;
    for (auto& x : per) x += rounds * il;
    for (std::uint64_t b = first + rounds * round; b < end;) {
      const std::uint64_t next = std::min(end, (b / il + 1) * il);
      per[std::size_t(hbm_stack_of(p, b))] += next - b;
      b = next;
    }
    for (std::uint64_t b = a; b < first;) {
      const std::uint64_t next = std::min(first, (b / il + 1) * il);
      per[std::size_t(hbm_stack_of(p, b))] += next - b;
      b = next;
    }
    return per;
  }
  while (a < end) {
    const std::uint64_t next = std::min(end, (a / il + 1) * il);
    per[std::size_t(hbm_stack_of(p, a))] += next - a;
    a = next;
  }
  return per;
}

}  // namespace

FallbackHbm::FallbackHbm(const sc_core::sc_module_name& name, const config::HbmParams& p)
    : Block(name),
      p_(p),
      stacks_(std::size_t(p.stacks)),
      read_(stats().add("bytes_read", "B", "bytes read")),
      written_(stats().add("bytes_written", "B", "bytes written")) {
  set_static_power(p.energy.background_per_stack * double(p.stacks));
}

sc_time FallbackHbm::access(const MemRequest& r) {
  const auto per = split_by_stack(p_, r.addr, r.bytes);
  const Bandwidth stack_bw = p_.bandwidth / double(p_.stacks);
  const Duration lat = p_.controller_latency + p_.timing.tRCD + (r.write ? p_.timing.tCWL : p_.timing.tCL);
  sc_time done = sc_core::sc_time_stamp();
  for (std::size_t s = 0; s < per.size(); ++s) {
    if (per[s] == 0) continue;
    done = std::max(done, stacks_[s].reserve(sc_core::sc_time_stamp(),
                                             to_sc(transfer_time(Bytes(double(per[s])), stack_bw))));
  }
  const Bytes b(double(r.bytes));
  const EnergyPerBit e = (r.write ? p_.energy.write : p_.energy.read) + p_.energy.phy + p_.energy.controller;
  add_energy(r.write ? "hbm_write" : "hbm_read", energy(e, b));
  (r.write ? written_ : read_) += double(r.bytes);
  return done + to_sc(lat);
}

DieCrossing::DieCrossing(const sc_core::sc_module_name& name, const config::ChipParams& p)
    : Block(name),
      dies_(p.dies),
      bw_(p.die_to_die_bandwidth),
      latency_(p.die_to_die_latency),
      energy_(p.die_to_die_energy),
      dir_(std::size_t(p.dies * p.dies)),
      bytes_(stats().add("bytes", "B", "bytes that crossed between dies")) {}

sc_time DieCrossing::cross(int from, int to, std::uint64_t bytes) {
  const Bytes b{double(bytes)};
  add_energy("die_to_die", energy(energy_, b));
  bytes_ += double(bytes);
  return dir_[std::size_t(from * dies_ + to)].reserve(sc_core::sc_time_stamp(),
                                                      to_sc(transfer_time(b, bw_))) +
         to_sc(latency_);
}

sc_time DieMemoryPort::access(const MemRequest& r) {
  sc_time done = hbm_.access(r);
  if (p_.dies <= 1) return done;
  const auto per = split_by_stack(p_.hbm, r.addr, r.bytes);
  const int stacks_per_die = std::max(1, p_.hbm.stacks / p_.dies);
  std::vector<std::uint64_t> remote(std::size_t(p_.dies), 0);
  for (std::size_t s = 0; s < per.size(); ++s) {
    const int die = std::min(p_.dies - 1, int(s) / stacks_per_die);
    if (die != die_) remote[std::size_t(die)] += per[s];
  }
  sc_time crossed = sc_core::SC_ZERO_TIME;
  bool any = false;
  for (int d = 0; d < p_.dies; ++d) {
    if (remote[std::size_t(d)] == 0) continue;
    any = true;
    crossed = std::max(crossed, r.write ? d2d_.cross(die_, d, remote[std::size_t(d)])
                                        : d2d_.cross(d, die_, remote[std::size_t(d)]));
  }
  return any ? std::max(done + to_sc(p_.die_to_die_latency), crossed) : done;
}

}  // namespace trnsim::model
