// SPDX-License-Identifier: MIT
#include "trnsim/bench/bench.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "internal.hpp"
#include "trnsim/registry/registry.hpp"
#include "trnsim/error.hpp"

namespace trnsim::bench {

std::string data_dir() {
  if (const char* d = std::getenv("TRNSIM_DATA_DIR"); d && *d) return d;
  return TRNSIM_SOURCE_DIR;
}

std::string data_path(const std::string& name) { return data_dir() + "/" + name; }

config::LoadedConfig ConfigSource::load() const {
  auto loaded = config::load_config(path.empty() ? data_path(kDefaultRack) : path, sets);
  // The resolve step, as `trnsim config` runs it: every command accepts the same configs.
  registry::Registry registry;
  registry::register_builtin_models(registry);
  registry::check(registry, loaded);
  return loaded;
}

const config::ChipParams& chip_of(const config::LoadedConfig& c, const std::string& file) {
  if (!c.config.chip) {
    throw ConfigError(fmt::format("{}:/chip: missing: this benchmark needs a chip or rack preset",
                                  file.empty() ? c.path : file));
  }
  return *c.config.chip;
}

std::uint64_t parse_size(const std::string& s, const char* option, std::uint64_t min) {
  const auto bad = [&] {
    return InputError(fmt::format(
        "{}: expected a byte count >= {} such as 268435456 or \"256MiB\", got \"{}\"", option,
        min, s));
  };
  std::uint64_t v = 0;
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); })) {
    try {
      v = std::stoull(s);
    } catch (const std::exception&) {
      throw bad();
    }
  } else {
    try {
      v = whole_bytes(parse_bytes(s));
    } catch (const InputError&) {
      throw bad();
    }
  }
  if (v < min) throw bad();
  return v;
}

namespace {

bool write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return false;
    off += std::size_t(n);
  }
  return true;
}

}  // namespace

Json run_isolated(const std::function<Json()>& measure) {
  int fds[2];
  if (::pipe(fds) != 0) throw InternalError("pipe() failed");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) throw InternalError("fork() failed");
  if (pid == 0) {
    ::close(fds[0]);
    Json out;
    int code = 0;
    try {
      out = {{"ok", measure()}};
    } catch (const InputError& e) {
      out = {{"input_error", e.what()}};
      code = 2;
    } catch (const std::exception& e) {
      out = {{"internal_error", e.what()}};
      code = 1;
    }
    const bool ok = write_all(fds[1], out.dump());
    ::close(fds[1]);
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(ok ? code : 1);
  }
  ::close(fds[1]);
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, std::size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  const auto j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    throw InternalError(fmt::format("benchmark child process died (status {})", status));
  }
  if (j.contains("input_error")) throw InputError(j["input_error"].get<std::string>());
  if (j.contains("internal_error")) throw InternalError(j["internal_error"].get<std::string>());
  return j["ok"];
}

}  // namespace trnsim::bench
