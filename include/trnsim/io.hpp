// SPDX-License-Identifier: MIT
// Input and output helpers. Inputs are read only from regular files of bounded size (no
// directories, devices or FIFOs, which would hang or read forever). Results are written
// atomically: a file through a temporary and a rename, a directory of results through a
// temporary sibling directory renamed into place, so a failed or interrupted run never leaves a
// partial result behind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trnsim {

// Largest config or process-group file read (a preset is a few kB).
inline constexpr std::uint64_t kMaxConfigFileBytes = std::uint64_t(64) << 20;
// Largest trace file read, and largest size a compressed trace may inflate to.
inline constexpr std::uint64_t kMaxTraceFileBytes = std::uint64_t(4) << 30;

// Memory that work estimated from the inputs may take when the config sets no budget
// (/sim/memory_budget): a quarter of the machine's physical memory, leaving the rest for what is
// not estimated (models, statistics, the kernel's own tables).
std::uint64_t default_memory_budget();

// Why `path` cannot be read as an input file ("is a directory", "is a character device", ...,
// or the strerror of stat), or "" when it is a regular file of at most max_bytes.
std::string input_file_problem(const std::string& path, std::uint64_t max_bytes);

// The contents of the regular file `path`; throws InputError "path: <why>" otherwise.
std::string read_input_file(const std::string& path, std::uint64_t max_bytes);

// Writes `content` to `path` through `path.tmp.<pid>` and a rename. Throws InputError naming the
// reason (strerror) when it cannot be written.
void write_file_atomic(const std::string& path, const std::string& content);

// Creates the missing folders above `path` (a file, a directory or a file prefix); InputError
// naming `option` and the folder when one cannot be made.
void create_parent_directories(const std::string& path, std::string_view option = "--out");

// A directory of results that appears complete or not at all. Files are added in memory; commit()
// writes them into `<dir>.tmp.<pid>` beside `dir` and renames that over `dir`. A `dir` that exists
// is replaced only when it holds nothing but regular files of the names being written (an earlier
// result); anything else there is refused rather than deleted. Until the rename, SIGINT and
// SIGTERM remove the temporary directory before the process ends.
class OutputDir {
 public:
  explicit OutputDir(std::string dir);
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;
  ~OutputDir();

  void add(std::string name, std::string content);
  // `content` not copied: it must outlive commit() (a run's ops.csv is tens of MB).
  void add_ref(std::string name, const std::string& content);
  // Names an earlier result in `dir` may hold besides those added (a run that writes some of its
  // files replaces one that wrote all of them): commit() replaces them too, rather than refusing.
  void also_replaces(std::vector<std::string> names) { replaces_ = std::move(names); }
  void commit();

  // Throws InputError when `dir` could not be written (its parent read-only, a file of that
  // name, a directory holding anything but regular files named in `ours`), so a run can refuse
  // before it simulates. Creates the missing parent folders, as commit() would.
  static void check_writable(const std::string& dir, const std::vector<std::string>& ours);

 private:
  std::string dir_;
  std::vector<std::pair<std::string, std::string>> files_;
  std::vector<const std::string*> refs_;  // per file: its content when added by add_ref()
  std::vector<std::string> replaces_;
};

// The offset of the first byte of `s` that does not begin or continue a well-formed UTF-8
// sequence (RFC 3629: no overlong forms, surrogates or code points above U+10FFFF), or npos.
// Inputs that end up in JSON (configs, command lines in reports) must be UTF-8.
std::size_t invalid_utf8(std::string_view s);

}  // namespace trnsim
