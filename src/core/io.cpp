// SPDX-License-Identifier: MIT
#include "trnsim/io.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "trnsim/error.hpp"

namespace trnsim {

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw InputError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
    }
    out << content;
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw InputError(fmt::format("{}: write failed", path));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InputError(fmt::format("{}: cannot write: {}", path, ec.message()));
  }
}

}  // namespace trnsim
