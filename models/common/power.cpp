// SPDX-License-Identifier: MIT
#include "common/power.hpp"

#include "common/block.hpp"

namespace trnsim::model {

namespace {

constexpr std::array<std::string_view, kActions> kNames = {
    "chip_forwarding", "die_to_die",      "dma",             "gpsimd_elements",
    "hbm_activate",    "hbm_controller",  "hbm_phy",         "hbm_read",
    "hbm_refresh",     "hbm_write",       "link",            "psum_read",
    "psum_write",      "sbuf_read",       "sbuf_write",      "scalar_elements",
    "switch",          "tensor_mac_bf16", "tensor_mac_fp16", "tensor_mac_fp32",
    "tensor_mac_fp8",  "tensor_mac_mxfp4", "tensor_mac_mxfp8", "vector_elements"};

constexpr bool sorted_names() {
  for (std::size_t i = 1; i < kNames.size(); ++i) {
    if (!(kNames[i - 1] < kNames[i])) return false;
  }
  return true;
}
static_assert(sorted_names(), "Action must stay in the alphabetical order of its names");

}  // namespace

std::string_view action_name(Action a) { return kNames.at(std::size_t(a)); }

std::optional<Action> action_named(std::string_view name) {
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return Action(i);
  }
  return std::nullopt;
}

ActionUnit action_unit(Action a) {
  switch (a) {
    case Action::hbm_activate: return ActionUnit::activations;
    case Action::hbm_refresh: return ActionUnit::refreshes;
    case Action::gpsimd_elements:
    case Action::scalar_elements:
    case Action::vector_elements: return ActionUnit::elements;
    case Action::tensor_mac_bf16:
    case Action::tensor_mac_fp16:
    case Action::tensor_mac_fp32:
    case Action::tensor_mac_fp8:
    case Action::tensor_mac_mxfp4:
    case Action::tensor_mac_mxfp8: return ActionUnit::macs;
    default: return ActionUnit::bytes;
  }
}

std::string_view unit_symbol(ActionUnit u) {
  switch (u) {
    case ActionUnit::bytes: return "B";
    case ActionUnit::macs: return "MAC";
    case ActionUnit::elements: return "element";
    case ActionUnit::activations: return "activation";
    case ActionUnit::refreshes: return "refresh";
  }
  return "?";
}

Action tensor_mac(DType d) {
  switch (d) {
    case DType::fp32: return Action::tensor_mac_fp32;
    case DType::bf16: return Action::tensor_mac_bf16;
    case DType::fp16: return Action::tensor_mac_fp16;
    case DType::fp8: return Action::tensor_mac_fp8;
    case DType::mxfp8: return Action::tensor_mac_mxfp8;
    case DType::mxfp4: return Action::tensor_mac_mxfp4;
  }
  return Action::tensor_mac_fp32;
}

Energy TablePower::dynamic(const Block&, Action, const ActionMeter& meter) const {
  return Energy(meter.rated_j);
}

Energy TablePower::static_energy(const Block& block, Duration elapsed) const {
  return energy(block.static_power(), elapsed);
}

}  // namespace trnsim::model
