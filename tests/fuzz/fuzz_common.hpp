// SPDX-License-Identifier: MIT
// What every fuzz target accepts: a bad input may throw InputError (and its subclasses), nothing
// else. Any other exception, a signal or a sanitizer report is a bug libFuzzer saves as a crash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "trnsim/error.hpp"

namespace trnsim::fuzz {

template <class F>
int accept_input_errors(F f) {
  try {
    f();
  } catch (const InputError&) {
    // the expected outcome for most inputs
  } catch (const std::exception& e) {
    std::fprintf(stderr, "not an input error: %s\n", e.what());
    std::abort();
  }
  return 0;
}

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace trnsim::fuzz
