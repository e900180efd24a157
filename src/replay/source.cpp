// SPDX-License-Identifier: MIT
#include "trnsim/replay/source.hpp"

namespace trnsim::replay {

std::optional<UnitKey> phase_unit_key(const trace::Op& op) {
  using trace::Phase;
  const auto phase = trace::infer_phase(op);
  const auto mb = trace::infer_micro_batch(op);
  if (!phase || !mb) return std::nullopt;
  switch (*phase) {
    case Phase::forward:
    case Phase::backward:
    case Phase::prefill:
    case Phase::decode: return UnitKey{std::int64_t(*phase), *mb};
    case Phase::optimizer:
    case Phase::gradient_sync: return std::nullopt;
  }
  return std::nullopt;
}

void TraceSource::calibration_ops(const OpVisitor& visit) const {
  for (const auto& rank : w_.ranks) {
    for (const auto& op : rank.ops) visit(rank.rank, op);
  }
}

}  // namespace trnsim::replay
