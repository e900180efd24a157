// SPDX-License-Identifier: MIT
// Rules over the raw config that every purpose applies before anything is derived from it.
#include <fmt/format.h>

#include "internal.hpp"

namespace trnsim::resolve {

void check_config(const config::LoadedConfig& loaded) {
  const config::Config& c = loaded.config;
  const Where at(&loaded.provenance);
  // A time step derived from a size and a rate must be a whole number of the kernel's picoseconds
  // and far below its 2^64 ps range, or events collapse onto one instant or run off the end of
  // time.
  auto check_step = [&](const std::string& ptr, Bytes size, Bandwidth rate, std::string_view what) {
    const double step = size.si / rate.si;
    if (!(step >= 1e-12 && step <= 1.0)) {
      at.fail(ptr, fmt::format("{} of {} at {} takes {:.3g} s; expected between 1 ps and 1 s per "
                               "step (is the rate {}?)",
                               what, format(size), format(rate), step,
                               step > 1.0 ? "too low" : "too high"));
    }
  };
  if (c.chip) {
    const auto& h = c.chip->hbm;
    const double per_pc = double(h.stacks) * h.channels * h.pseudo_channels;
    check_step("/chip/hbm/bandwidth", h.burst_bytes, h.bandwidth / per_pc,
               "one burst on one pseudo-channel");
    const auto& d = c.chip->core.dma;
    check_step("/chip/core/dma/engine_bandwidth", d.packet_bytes, d.engine_bandwidth,
               "one DMA packet");
    check_step("/chip/die_to_die_bandwidth", Bytes(64), c.chip->die_to_die_bandwidth,
               "a 64 B die crossing");
    check_step("/chip/link/lane_rate", Bytes(1), c.chip->link.lane_rate, "one byte on one lane");
    // The HBM command clock (at most 1 THz) is HbmGeometry's: it derives the clock.
    if (h.row_bytes.si < h.burst_bytes.si) {
      at.fail("/chip/hbm/row_bytes",
              fmt::format("expected a row of at least one burst ({}), got {}",
                          format(h.burst_bytes), format(h.row_bytes)));
    }
    if (c.chip->cores % c.chip->dies != 0) {
      at.fail("/chip/cores", fmt::format("expected a multiple of /chip/dies ({}), got {}",
                                         c.chip->dies, c.chip->cores));
    }
    if (c.chip->hbm.stacks % c.chip->dies != 0) {
      at.fail("/chip/hbm/stacks", fmt::format("expected a multiple of /chip/dies ({}), got {}",
                                              c.chip->dies, c.chip->hbm.stacks));
    }
  }
  if (c.rack) {
    const auto& t = c.rack->topology;
    const auto packet = c.rack->fabric.packet_bytes;
    auto links = [&](const std::string& ptr, const topo::LinkClass& l) {
      check_step(ptr + "/bandwidth", packet, l.bandwidth, "one fabric packet");
    };
    if (t.torus) {
      for (std::size_t i = 0; i < t.torus->dim_links.size(); ++i) {
        links(fmt::format("/rack/topology/torus/dim_links/{}", i), t.torus->dim_links[i]);
      }
    }
    if (t.two_level) {
      links("/rack/topology/two_level/chip_to_l1", t.two_level->chip_to_l1);
      links("/rack/topology/two_level/up_link", t.two_level->up_link);
      if (t.two_level->inter_rack) {
        links("/rack/topology/two_level/inter_rack", *t.two_level->inter_rack);
      }
    }
    if (t.folded_clos) {
      links("/rack/topology/folded_clos/chip_to_leaf", t.folded_clos->chip_to_leaf);
      links("/rack/topology/folded_clos/leaf_to_spine", t.folded_clos->leaf_to_spine);
    }
    for (std::size_t i = 0; i < t.links.size(); ++i) {
      check_step(fmt::format("/rack/topology/links/{}/bandwidth", i), packet,
                 t.links[i].bandwidth, "one fabric packet");
    }
    // The workload's cases replay its collectives on one rack's ranks; a cluster's collectives
    // are split across UltraServers and the scale-out network (run/flow_calibration.hpp).
    if (c.cluster && c.rack->fabric.flow_calibration == config::FlowCalibration::workload) {
      at.fail("/rack/fabric/flow_calibration",
              "expected none or packet with /cluster: workload calibrates one rack's fabric on "
              "the workload's collectives, which a cluster splits across UltraServers");
    }
  }
}

}  // namespace trnsim::resolve
