// SPDX-License-Identifier: MIT
// Phase and layer of an op for the report, guessed from the bundled generator's names where the
// trace does not give them.
#include <charconv>
#include <string_view>

#include "trnsim/trace/workload.hpp"

namespace trnsim::trace {

namespace {

bool ends_with_any(std::string_view s, std::initializer_list<std::string_view> tails) {
  for (auto t : tails) {
    if (s.ends_with(t)) return true;
  }
  return false;
}

// N of "<letter><N>." at the start of `name`; `rest` is what follows the dot.
std::optional<int> number_prefix(std::string_view name, char letter, std::string_view* rest = nullptr) {
  if (name.size() < 3 || name[0] != letter) return std::nullopt;
  int v = 0;
  const auto [p, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), v);
  if (ec != std::errc() || p == name.data() + 1 || p == name.data() + name.size() || *p != '.' ||
      v < 0) {
    return std::nullopt;
  }
  if (rest) *rest = name.substr(std::size_t(p + 1 - name.data()));
  return v;
}

std::optional<int> layer_prefix(std::string_view name) { return number_prefix(name, 'l'); }

}  // namespace

std::optional<Phase> infer_phase(const Op& op) {
  if (op.phase) return op.phase;
  const std::string_view n = op.name;
  // tools/moe/build.py: l<L>.<class>_grad_rs / _grad_ar, _adam, _param_ag; backward ops carry a
  // .dgrad, .wgrad or .bwd part (l0.m0.attn.bwd.dqk).
  if (ends_with_any(n, {"_grad_rs", "_grad_ar", "_param_ag"})) return Phase::gradient_sync;
  if (n.ends_with("_adam")) return Phase::optimizer;
  if (n.find(".dgrad") != n.npos || n.find(".wgrad") != n.npos || n.find(".bwd") != n.npos) {
    return Phase::backward;
  }
  if (layer_prefix(n)) return Phase::forward;
  // Pipeline transfers between stages: m<M>.act.send / .recv (forward), m<M>.grad.* (backward).
  std::string_view rest;
  if (number_prefix(n, 'm', &rest)) {
    if (rest.starts_with("act.")) return Phase::forward;
    if (rest.starts_with("grad.")) return Phase::backward;
  }
  return std::nullopt;
}

std::optional<int> infer_layer(const Op& op) {
  if (op.layer) return op.layer;
  return layer_prefix(op.name);
}

std::optional<int> infer_micro_batch(const Op& op) {
  if (op.micro_batch) return op.micro_batch;
  std::string_view rest;
  if (!number_prefix(op.name, 'l', &rest)) return std::nullopt;
  return number_prefix(rest, 'm');
}

}  // namespace trnsim::trace
