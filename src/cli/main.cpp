// SPDX-License-Identifier: MIT
// trnsim: the command line. Exit codes: 0 success, 2 bad input, 1 internal error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <string_view>

#include "bench_common.hpp"
#include "commands.hpp"
#include "presets.hpp"
#include "trnsim/report/version.hpp"
#include "trnsim/error.hpp"
#include "trnsim/io.hpp"
#include "trnsim/isolate.hpp"
#include "trnsim/log.hpp"

namespace trnsim::cli {

CLI::Option* add_set_option(CLI::App* sub, std::vector<std::string>& sets) {
  return sub
      ->add_option("--set", sets,
                   "override a config field: path=value (chip.hbm.stacks=4 or "
                   "/chip/hbm/stacks=4); repeatable")
      ->allow_extra_args(false)
      ->type_name("PATH=VALUE");
}

namespace {

// --help (and the man pages made from it) without CLI11's notation: "--n UINT (default 4096)"
// instead of "--n UINT=4096", no "=[]" after a repeatable option that has no value yet, no
// "{false}" after a negated flag.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, positional);
    for (std::size_t open; (open = name.find('{')) != std::string::npos;) {
      const std::size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
  std::string make_option_opts(const CLI::Option* opt) const override {
    std::string out;
    if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
    if (opt->get_type_size() != 0) {
      if (!opt->get_type_name().empty()) out += " " + get_label(opt->get_type_name());
      const std::string d = opt->get_default_str();
      if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
      if (!d.empty() && d != "[]" && d != "{}" && d != "\"\"") out += " (default " + d + ")";
      if (opt->get_required()) out += " " + get_label("REQUIRED");
    }
    return out;
  }
};

int run(int argc, char** argv) {
  CLI::App app{"trnsim: cycle-approximate simulator of AWS Trainium UltraServers", "trnsim"};
  app.set_version_flag("--version", fmt::format("trnsim {} (commit {})", report::version(),
                                                report::git_commit()));
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str();
  app.require_subcommand(1);
  app.fallthrough();
  // Every option's default in --help (and the man pages made from it): subcommands copy this.
  app.option_defaults()->always_capture_default();
  app.formatter(std::make_shared<HelpFormatter>());

  Registry reg;
  reg.argv.assign(argv, argv + argc);
  register_config_commands(app, reg);
  register_topo_command(app, reg);
  register_run_command(app, reg);
  register_bench_commands(app, reg);
  register_sweep_command(app, reg);
  register_compare_command(app, reg);
  register_presets_command(app, reg);
  register_trace_command(app, reg);
  register_claims_command(app, reg);
  register_solve_command(app, reg);
  register_serve_command(app, reg);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the error
    return code == 0 ? 0 : 2;
  }
  set_log_level(log_level);
  for (const Registry::Entry& e : reg.actions) {
    if (!e.sub->parsed()) continue;
    if (e.footprint == Footprint::builds_models) exec_with_huge_page_malloc(argv);
    return e.action();
  }
  throw InternalError("no subcommand action ran");
}

}  // namespace
}  // namespace trnsim::cli

int main(int argc, char** argv) {
  trnsim::cli::use_installed_data_dir();
  try {
    // Arguments end up in JSON (the command line in report.json, --set values in config.json),
    // which holds UTF-8 text only: a byte that is not would fail when the results are written.
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (const std::size_t bad = trnsim::invalid_utf8(a); bad != std::string_view::npos) {
        throw trnsim::InputError(fmt::format(
            "argument {} ({:?}...): byte {} (0x{:02X}) is not valid UTF-8; trnsim takes its "
            "arguments, paths included, as UTF-8 text",
            i, a.substr(0, bad), bad, static_cast<unsigned char>(a[bad])));
      }
    }
    return trnsim::cli::run(argc, argv);
  } catch (const trnsim::InputError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "trnsim: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "trnsim: internal error: {}\n", e.what());
    return 1;
  }
}
