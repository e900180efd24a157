// SPDX-License-Identifier: MIT
// `trnsim bench kernel`: the options and the table; the benchmark is in src/bench/kernel.cpp.
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <string>

#include "bench_common.hpp"
#include "trnsim/bench/kernel.hpp"

namespace trnsim::cli {

namespace {

struct KernelOpts {
  bench::KernelArgs args;
  bool json = false;
};

}  // namespace

void register_bench_kernel(CLI::App& bench, Registry& reg) {
  auto o = std::make_shared<KernelOpts>();
  auto* sub = bench.add_subcommand(
      "kernel", "activations per second of a bare SystemC event loop (the models' ceiling)");
  sub->add_option("--processes", o->args.processes, "method processes, each with its own period")
      ->check(CLI::Range(1, 1'000'000));
  sub->add_option("--activations", o->args.activations, "activations to run")
      ->check(CLI::Range(std::uint64_t(1), std::uint64_t(1'000'000'000'000)));
  sub->add_flag("--threads", o->args.threads,
                "thread processes that wait(period) instead of method processes (what an "
                "activation costs for being a thread)");
  sub->add_flag("--json", o->json, "print one JSON object");
  reg.add(sub, Footprint::builds_models, [o]() {
    const auto r = bench::kernel(o->args);
    if (o->json) {
      fmt::print("{}\n", r.dump(2));
      return 0;
    }
    fmt::print("bare SystemC event loop: {} {} processes, {} activations in {:.2f} s\n",
               r["processes"].get<int>(), r["process_kind"].get<std::string>(),
               r["activations"].get<std::uint64_t>(),
               r["wall_time_s"].get<double>());
    fmt::print("  {:.3g} activations per second\n", r["activations_per_s"].get<double>());
    return 0;
  });
}

}  // namespace trnsim::cli
