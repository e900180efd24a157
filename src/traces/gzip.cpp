// SPDX-License-Identifier: MIT
#include "trnsim/trace/gzip.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <vector>

#include "trnsim/error.hpp"

namespace trnsim::trace {

bool is_gzip(const std::string& data) {
  return data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
         static_cast<unsigned char>(data[1]) == 0x8b;
}

std::string gunzip(const std::string& in, const std::string& path, std::uint64_t limit) {
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
    out.append(buf.data(), buf.size() - zs.avail_out);
    if (out.size() > limit) {  // a gzip bomb, or a trace too large to hold
      inflateEnd(&zs);
      throw TraceError(fmt::format("{}: decompresses to more than {} bytes, the most a trace file "
                                   "may have",
                                   path, limit));
    }
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

}  // namespace trnsim::trace
