// SPDX-License-Identifier: MIT
#include "trnsim/serve/arrivals.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <ctime>
#include <random>
#include <sstream>

#include "trnsim/error.hpp"
#include "trnsim/io.hpp"

namespace trnsim::serve {

namespace {

constexpr std::uint64_t kMaxRequestFileBytes = std::uint64_t(1) << 30;

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

std::uint64_t tokens(const std::string& s, const std::string& where, const char* what) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1 || v > 10'000'000) {
    throw InputError(fmt::format("{}: {}: expected an integer in [1, 1e7], got \"{}\"", where,
                                 what, s));
  }
  return v;
}

// "2023-11-16 18:15:46.6805900" -> seconds since the epoch (UTC), fraction kept.
double azure_time(const std::string& s, const std::string& where) {
  std::tm tm{};
  double frac = 0;
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, se = 0;
  char tail[32] = {0};
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%31s", &y, &mo, &d, &h, &mi, &se, tail) < 6) {
    throw InputError(fmt::format("{}: TIMESTAMP: expected \"YYYY-MM-DD hh:mm:ss.fffffff\", got "
                                 "\"{}\"",
                                 where, s));
  }
  if (tail[0] == '.') frac = std::atof(tail);
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  return double(timegm(&tm)) + frac;
}

}  // namespace

double unit_draw(std::uint64_t bits) { return double(bits >> 11) * 0x1.0p-53; }

std::vector<Request> read_request_file(const std::string& path, double time_scale) {
  const std::string text = read_input_file(path, kMaxRequestFileBytes);
  std::vector<Request> out;
  std::istringstream in(text);
  std::string line;
  std::size_t n = 0;
  const bool jsonl = path.ends_with(".jsonl");
  bool azure = false;
  while (std::getline(in, line)) {
    ++n;
    const std::string where = fmt::format("{}:{}", path, n);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    Request r;
    if (jsonl) {
      // Mooncake: {"timestamp": ms, "input_length", "output_length", "hash_ids"} (the hash ids,
      // prefix-cache blocks, are read past: no prefix cache is modelled).
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("timestamp") ||
          !j.contains("input_length") || !j.contains("output_length") ||
          !j["timestamp"].is_number() || !j["input_length"].is_number_unsigned() ||
          !j["output_length"].is_number_unsigned()) {
        throw InputError(fmt::format("{}: expected a JSON object with numbers \"timestamp\" (ms), "
                                     "\"input_length\" and \"output_length\"",
                                     where));
      }
      r.arrival_s = j["timestamp"].get<double>() * 1e-3;
      r.input_tokens = tokens(std::to_string(j["input_length"].get<std::uint64_t>()), where,
                              "input_length");
      r.output_tokens = tokens(std::to_string(j["output_length"].get<std::uint64_t>()), where,
                               "output_length");
    } else {
      const auto f = split(line, ',');
      if (n == 1) {
        if (f.size() == 3 && f[0] == "TIMESTAMP" && f[1] == "ContextTokens" &&
            f[2] == "GeneratedTokens") {
          azure = true;
          continue;
        }
        if (f.size() == 3 && f[0] == "arrival_s" && f[1] == "input_tokens" &&
            f[2] == "output_tokens") {
          continue;
        }
        throw InputError(fmt::format("{}: expected the header TIMESTAMP,ContextTokens,"
                                     "GeneratedTokens (Azure) or arrival_s,input_tokens,"
                                     "output_tokens",
                                     where));
      }
      if (f.size() != 3) throw InputError(fmt::format("{}: expected 3 fields, got {}", where, f.size()));
      if (azure) {
        r.arrival_s = azure_time(f[0], where);
      } else {
        char* end = nullptr;
        r.arrival_s = std::strtod(f[0].c_str(), &end);
        if (f[0].empty() || end != f[0].c_str() + f[0].size() || !(r.arrival_s >= 0) ||
            !std::isfinite(r.arrival_s)) {
          throw InputError(fmt::format("{}: arrival_s: expected seconds >= 0, got \"{}\"", where, f[0]));
        }
      }
      // Azure: a request's output can be 0 tokens (refused or cancelled); it is served as 1.
      r.input_tokens = tokens(f[1], where, "input tokens");
      r.output_tokens = f[2] == "0" ? 1 : tokens(f[2], where, "output tokens");
    }
    if (!out.empty() && r.arrival_s < out.back().arrival_s) {
      throw InputError(fmt::format("{}: arrivals must not go back in time", where));
    }
    out.push_back(r);
  }
  if (out.empty()) throw InputError(fmt::format("{}: no requests", path));
  const double t0 = out.front().arrival_s;
  for (auto& r : out) r.arrival_s = (r.arrival_s - t0) * time_scale;
  return out;
}

Workload make_workload(const ArrivalParams& a, std::uint64_t count, const std::string& origin) {
  Workload w;
  std::vector<Request> file;
  const bool drawn = a.kind != ArrivalKind::file && (a.input_tokens == 0 || a.output_tokens == 0);
  if (a.kind == ArrivalKind::file || drawn) {
    if (a.path.empty()) {
      throw ConfigError(fmt::format("{}:/arrivals/path: expected a request file ({})", origin,
                                    a.kind == ArrivalKind::file ? "kind file"
                                                                : "lengths drawn from it"));
    }
    file = read_request_file(a.path, a.time_scale);
  }
  if (a.kind == ArrivalKind::file) {
    if (file.size() < count) {
      throw ConfigError(fmt::format("{}:/run/requests: {} has {} requests, fewer than the {} asked "
                                    "for (warm-up included)",
                                    origin, a.path, file.size(), count));
    }
    file.resize(count);
    w.open = std::move(file);
    return w;
  }
  std::mt19937_64 rng(a.seed);
  auto lengths = [&]() {
    Request r;
    std::size_t pick = 0;
    if (drawn) pick = std::size_t(unit_draw(rng()) * double(file.size()));
    r.input_tokens = a.input_tokens ? a.input_tokens : file[pick].input_tokens;
    r.output_tokens = a.output_tokens ? a.output_tokens : file[pick].output_tokens;
    return r;
  };
  if (a.kind == ArrivalKind::closed) {
    w.users = a.users;
    w.think_s = a.think_time.si;
    for (std::uint64_t i = 0; i < count; ++i) w.lengths.push_back(lengths());
    return w;
  }
  double t = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    Request r = lengths();
    t += -std::log(1 - unit_draw(rng())) / a.rate_per_s;
    r.arrival_s = t;
    w.open.push_back(r);
  }
  return w;
}

}  // namespace trnsim::serve
