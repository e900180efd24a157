// SPDX-License-Identifier: MIT
#include "trnsim/trace/gzip.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "trnsim/error.hpp"
#include "trnsim/io.hpp"

namespace trnsim::trace {

bool is_gzip(const std::string& data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

namespace {

// Deflate reaches about 1032:1 on runs of one byte; traces compress 3:1 to 33:1 (the bundled and
// third-party ones, gzip -9). Output beyond kMaxInflateRatio times the compressed size (and
// beyond kInflateFloor, so that small files are never refused for their ratio) is a bomb, not a
// trace: it is refused as it inflates, holding at most that much.
constexpr std::uint64_t kMaxInflateRatio = 256;
constexpr std::uint64_t kInflateFloor = std::uint64_t(64) << 20;

}  // namespace

InflateLimit inflate_limit(std::uint64_t compressed_bytes, std::uint64_t limit) {
  InflateLimit l{limit, "the most a trace file may have"};
  const std::uint64_t budget = default_memory_budget();
  if (budget < l.bytes) {
    l = {budget, "the default memory budget (a quarter of this machine's memory)"};
  }
  const std::uint64_t by_ratio =
      compressed_bytes > (UINT64_MAX - 1) / kMaxInflateRatio
          ? UINT64_MAX
          : std::max(kInflateFloor, compressed_bytes * kMaxInflateRatio);
  if (by_ratio < l.bytes) {
    l = {by_ratio,
         fmt::format("{} times its {} compressed bytes or {} MiB, whichever is more: refused as a "
                     "gzip bomb (traces compress far less)",
                     kMaxInflateRatio, compressed_bytes, kInflateFloor >> 20)};
  }
  return l;
}

std::string gunzip(const std::string& in, const std::string& path, std::uint64_t limit) {
  const InflateLimit most = inflate_limit(in.size(), limit);
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) throw InternalError("zlib inflateInit2 failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  std::vector<char> buf(1 << 16);
  for (;;) {
    zs.next_out = reinterpret_cast<Bytef*>(buf.data());
    zs.avail_out = static_cast<uInt>(buf.size());
    const int ret = inflate(&zs, Z_NO_FLUSH);
    const std::size_t got = buf.size() - zs.avail_out;
    if (out.size() + got > most.bytes) {  // checked before the chunk is kept
      inflateEnd(&zs);
      throw TraceError(fmt::format("{}: decompresses to more than {} bytes, {}", path, most.bytes,
                                   most.why));
    }
    out.append(buf.data(), got);
    if (ret == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      inflateReset(&zs);  // concatenated gzip members
      continue;
    }
    if (ret == Z_OK) continue;
    const std::string why = ret == Z_BUF_ERROR ? "the compressed data ends early"
                                               : (zs.msg ? zs.msg : "corrupt data");
    inflateEnd(&zs);
    throw TraceError(fmt::format("{}: cannot decompress gzip: {}", path, why));
  }
  inflateEnd(&zs);
  return out;
}

std::string gzip(const std::string& in) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    throw InternalError("zlib deflateInit2 failed");
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  std::vector<char> buf(1 << 16);
  int ret = Z_OK;
  while (ret != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(buf.data());
    zs.avail_out = static_cast<uInt>(buf.size());
    ret = deflate(&zs, Z_FINISH);
    if (ret != Z_OK && ret != Z_STREAM_END) {
      deflateEnd(&zs);
      throw InternalError("zlib deflate failed");
    }
    out.append(buf.data(), buf.size() - zs.avail_out);
  }
  deflateEnd(&zs);
  return out;
}

std::string read_trace_bytes(const std::string& path, std::uint64_t max_bytes) {
  try {
    return read_input_file(path, max_bytes);
  } catch (const InputError& e) {
    throw TraceError(e.what());
  }
}

std::string read_trace_text(const std::string& path, std::uint64_t max_bytes) {
  std::string data = read_trace_bytes(path, max_bytes);
  if (is_gzip(data)) data = gunzip(data, path, max_bytes);
  return data;
}

}  // namespace trnsim::trace
