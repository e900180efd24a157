// SPDX-License-Identifier: MIT
// SHA-256 (FIPS 180-4) of the trace bytes, for the report's identity.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <fmt/format.h>

#include "trnsim/report/report.hpp"

namespace trnsim::report {

namespace {

constexpr std::array<std::uint32_t, 64> kK = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void block(std::array<std::uint32_t, 8>& h, const unsigned char* p) {
  std::array<std::uint32_t, 64> w{};
  for (int i = 0; i < 16; ++i) {
    w[i] = std::uint32_t(p[4 * i]) << 24 | std::uint32_t(p[4 * i + 1]) << 16 |
           std::uint32_t(p[4 * i + 2]) << 8 | std::uint32_t(p[4 * i + 3]);
  }
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  auto [a, b, c, d, e, f, g, k] = h;
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t t1 =
        k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
    const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  const std::array<std::uint32_t, 8> add{a, b, c, d, e, f, g, k};
  for (int i = 0; i < 8; ++i) h[i] += add[i];
}

#if defined(__x86_64__)
// The same compression with the x86 SHA extensions (SHA-NI: most x86-64 CPUs since 2016-2019),
// several times faster: the trace's hash was a tenth of a small run's instructions. Four rounds
// per step; the message schedule in four registers, W[g] for words 4g..4g+3.
__attribute__((target("sha,sse4.1,ssse3"))) void blocks_shani(std::array<std::uint32_t, 8>& h,
                                                              const unsigned char* p,
                                                              std::size_t n) {
  const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[0]));
  __m128i state1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&h[4]));
  tmp = _mm_shuffle_epi32(tmp, 0xB1);            // CDAB
  state1 = _mm_shuffle_epi32(state1, 0x1B);      // EFGH
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);  // ABEF
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);   // CDGH
  for (; n > 0; --n, p += 64) {
    const __m128i abef = state0, cdgh = state1;
    __m128i w[4];
    for (int g = 0; g < 16; ++g) {
      if (g < 4) {
        w[g] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * g)), mask);
      } else {
        // W[g] = msg2(msg1(W[g-4], W[g-3]) + (words 4g-7 .. 4g-4), W[g-1])
        __m128i x = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
        x = _mm_add_epi32(x, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
        w[g & 3] = _mm_sha256msg2_epu32(x, w[(g + 3) & 3]);
      }
      __m128i msg = _mm_add_epi32(w[g & 3], _mm_loadu_si128(reinterpret_cast<const __m128i*>(&kK[4 * g])));
      state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
      msg = _mm_shuffle_epi32(msg, 0x0E);
      state0 = _mm_sha256rnds2_epu32(state0, state1, msg);
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);          // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);       // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0);    // DCBA
  state1 = _mm_alignr_epi8(state1, tmp, 8);       // ABEF
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[0]), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(&h[4]), state1);
}

bool cpu_has_sha() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3)) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & (1u << 29)) != 0;  // SHA
}
#endif

// `n` whole blocks at `p`.
void blocks(std::array<std::uint32_t, 8>& h, const unsigned char* p, std::size_t n) {
#if defined(__x86_64__)
  static const bool sha = cpu_has_sha();
  if (sha) {
    blocks_shani(h, p, n);
    return;
  }
#endif
  for (; n > 0; --n, p += 64) block(h, p);
}

}  // namespace

Sha256& Sha256::update(std::string_view data) {
  length_ += data.size();
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t left = data.size();
  if (fill_ > 0) {
    const std::size_t take = std::min(left, 64 - fill_);
    std::memcpy(buf_.data() + fill_, p, take);
    fill_ += take;
    p += take;
    left -= take;
    if (fill_ < 64) return *this;
    blocks(h_, buf_.data(), 1);
    fill_ = 0;
  }
  // Whole blocks straight from the input, the rest kept for later.
  blocks(h_, p, left / 64);
  p += left / 64 * 64;
  left %= 64;
  std::memcpy(buf_.data(), p, left);
  fill_ = left;
  return *this;
}

std::string Sha256::hex() const {
  Sha256 t = *this;
  const std::uint64_t bits = length_ * 8;
  t.buf_[t.fill_++] = 0x80;
  if (t.fill_ > 56) {
    while (t.fill_ < 64) t.buf_[t.fill_++] = 0;
    blocks(t.h_, t.buf_.data(), 1);
    t.fill_ = 0;
  }
  while (t.fill_ < 56) t.buf_[t.fill_++] = 0;
  for (int i = 7; i >= 0; --i) t.buf_[t.fill_++] = static_cast<unsigned char>(bits >> (8 * i));
  blocks(t.h_, t.buf_.data(), 1);
  std::string out;
  for (std::uint32_t v : t.h_) out += fmt::format("{:08x}", v);
  return out;
}

}  // namespace trnsim::report
