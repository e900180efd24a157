// SPDX-License-Identifier: MIT
// Where a resolved value came from, so that a cross-field check names the file and the JSON
// pointer of the key the user wrote, even when the value reached its field through an override
// (/replay/fabric_packet_bytes applied as /rack/fabric/packet_bytes).
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

namespace trnsim::config {
class Provenance;
}

namespace trnsim::resolve {

class Where {
 public:
  Where() = default;  // no file known (tests that build params by hand)
  explicit Where(const config::Provenance* prov) : prov_(prov) {}

  // Values of `target` were copied from `source` (both JSON pointers).
  void alias(const std::string& target, const std::string& source) { aliases_[target] = source; }

  // Throws ConfigError "file:/pointer: message", with the pointer the user wrote.
  [[noreturn]] void fail(const std::string& pointer, std::string_view message) const;
  // For a rule over several fields: names the one the command line set, if any (the user's
  // latest word), else the first.
  [[noreturn]] void fail(std::initializer_list<std::string> pointers, std::string_view message) const;

 private:
  const config::Provenance* prov_ = nullptr;
  std::map<std::string, std::string> aliases_;
};

}  // namespace trnsim::resolve
