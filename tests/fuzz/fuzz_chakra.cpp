// SPDX-License-Identifier: MIT
// The Chakra reader: the input becomes rank 0 of a one-rank trace, as PREFIX.0.json when it
// starts with '{' (Chakra's JSON form) and PREFIX.0.et otherwise (protobuf, maybe gzipped).
#include <unistd.h>

#include <google/protobuf/stubs/logging.h>

#include <filesystem>
#include <fstream>

#include "fuzz_common.hpp"
#include "trnsim/trace/chakra.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);  // invalid UTF-8 in names is common and harmless
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trnsim;
  namespace fs = std::filesystem;
  // In memory (tmpfs) where there is one: the reader takes a file, written anew for each input.
  static const fs::path dir =
      (fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path()) /
      ("trnsim-fuzz-chakra-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string prefix = (dir / "t").string();
  fs::remove(prefix + ".0.et");
  fs::remove(prefix + ".0.json");
  const bool json = size > 0 && data[0] == '{';
  {
    std::ofstream out(prefix + (json ? ".0.json" : ".0.et"), std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  trace::ChakraOptions o;
  o.max_file_bytes = 16u << 20;  // a bomb stops at 16 MiB instead of 4 GiB
  return fuzz::accept_input_errors([&] { (void)trace::load_chakra(prefix, o); });
}
