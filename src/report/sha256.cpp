// SPDX-License-Identifier: MIT
// SHA-256 (FIPS 180-4) of the trace bytes, for the report's identity: nettle's, which picks its
// x86 SHA-extension code at load time where the CPU has it.
#include <nettle/sha2.h>

#include <array>
#include <string>
#include <string_view>

#include "trnsim/report/report.hpp"

namespace trnsim::report {

struct Sha256::Ctx {
  sha256_ctx c;
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) { sha256_init(&ctx_->c); }
Sha256::Sha256(const Sha256& o) : ctx_(std::make_unique<Ctx>(*o.ctx_)) {}
Sha256& Sha256::operator=(const Sha256& o) {
  *ctx_ = *o.ctx_;
  return *this;
}
Sha256::~Sha256() = default;

Sha256& Sha256::update(std::string_view data) {
  sha256_update(&ctx_->c, data.size(), reinterpret_cast<const std::uint8_t*>(data.data()));
  return *this;
}

std::string Sha256::hex() const {
  sha256_ctx t = ctx_->c;  // sha256_digest resets the context it finishes: finish a copy
  std::array<std::uint8_t, SHA256_DIGEST_SIZE> d{};
  sha256_digest(&t, d.size(), d.data());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(2 * d.size(), '0');
  for (std::size_t i = 0; i < d.size(); ++i) {
    out[2 * i] = kHex[d[i] >> 4];
    out[2 * i + 1] = kHex[d[i] & 15];
  }
  return out;
}

}  // namespace trnsim::report
