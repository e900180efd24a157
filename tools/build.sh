#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Configures and builds one CMake preset (release by default) with two jobs.
# The presets use Ninja (it compiles a target's files while the libraries it links are still
# building; make waits for them). A build directory configured before with another generator or
# compiler is configured afresh, since CMake refuses to switch either in place.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
cache="build/$preset/CMakeCache.txt"
fresh=()
if [ -f "$cache" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
  echo "build.sh: build/$preset was configured with another generator; configuring it afresh" >&2
  fresh=(--fresh)
fi
if [ -f "$cache" ] && [ "$preset" = asan ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang' "$cache"; then
  echo "build.sh: build/asan was configured with another compiler; configuring it afresh" >&2
  fresh=(--fresh)
fi
cmake --preset "$preset" "${fresh[@]}" >/dev/null
cmake --build --preset "$preset" -j2
