// SPDX-License-Identifier: MIT
// The trnsim version and the git commit it was built from (written at build time by
// src/report/version.cmake; "unknown" outside a git checkout, "-dirty" with local changes).
#pragma once

#include <string_view>

namespace trnsim::report {

std::string_view version();
std::string_view git_commit();

}  // namespace trnsim::report
