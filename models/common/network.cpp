// SPDX-License-Identifier: MIT
#include "common/network.hpp"

#include <fmt/format.h>

#include "trnsim/error.hpp"

namespace trnsim::model {

std::shared_ptr<TransferState> new_transfer(const TransferRequest& r, std::size_t chips,
                                            std::function<void(const TransferRecord&)> on_done) {
  if (r.src.v >= chips || r.dst.v >= chips) {
    throw InputError(fmt::format("transfer {} -> {}: chip ids must be below {}", r.src.v, r.dst.v,
                                 chips));
  }
  if (r.src == r.dst) {
    throw InputError(fmt::format("transfer {} -> {}: a chip cannot send to itself over the fabric",
                                 r.src.v, r.dst.v));
  }
  auto s = std::make_shared<TransferState>();
  s->record.request = r;
  s->record.issued = sc_core::sc_time_stamp();
  s->on_done = std::move(on_done);
  return s;
}

}  // namespace trnsim::model
