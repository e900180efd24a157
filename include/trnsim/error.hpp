// SPDX-License-Identifier: MIT
// Typed errors of the engine. Library code throws; only main() maps them to exit codes.
#pragma once

#include <stdexcept>
#include <string>

namespace trnsim {

// Any error caused by the user's input (config, topology, trace, command line): exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

class TopologyError : public InputError {
 public:
  using InputError::InputError;
};

class TraceError : public InputError {
 public:
  using InputError::InputError;
};

// A workload that cannot run on the chip it was given (an op whose tiles do not fit SBUF or PSUM):
// thrown by the models while they lower the op, naming the op and the chip field that limits it.
class WorkloadError : public InputError {
 public:
  using InputError::InputError;
};

// A value that is not a valid quantity ("four", "4.9TB" where a bandwidth is expected).
// Carries no location: the config reader adds file and JSON pointer.
class UnitError : public InputError {
 public:
  using InputError::InputError;
};

// A broken invariant inside trnsim: exit code 1.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace trnsim
