// SPDX-License-Identifier: MIT
#include "trnsim/serve/timer.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "../run/profile_cache.hpp"
#include "trnsim/error.hpp"
#include "trnsim/isolate.hpp"
#include "trnsim/log.hpp"
#include "trnsim/resolve/plan.hpp"
#include "trnsim/run/run.hpp"
#include "trnsim/run/simulation.hpp"

namespace trnsim::serve {

std::pair<std::uint64_t, std::uint64_t> grid_cell(std::uint64_t v, int per_octave) {
  if (v <= 4) return {v, v};
  std::uint64_t lo = 4;
  for (std::uint64_t p = 4;; p *= 2) {
    for (std::uint64_t q : {p, per_octave == 2 ? p / 2 * 3 : p}) {
      if (q == v) return {v, v};
      if (q > v) return {lo, q};
      lo = q;
    }
  }
}

std::pair<std::uint64_t, std::uint64_t> context_cell(std::uint64_t c, std::uint64_t tile,
                                                     int per_octave) {
  if (c <= 1 || c == tile) return {c, c};
  if (c < tile) return {1, tile};
  const std::uint64_t tiles = (c + tile - 1) / tile;
  // The grid's points a < tiles <= b (tiles >= 2).
  auto [a, b] = grid_cell(tiles, per_octave);
  if (a == b) a = grid_cell(tiles - 1, per_octave).first;
  const std::uint64_t lo = a * tile + 1, hi = b * tile;
  if (c == lo || c == hi) return {c, c};
  return {lo, hi};
}

std::pair<std::uint64_t, std::uint64_t> coarse_cell(std::uint64_t v) {
  if (v <= 1) return {v, v};
  std::uint64_t lo = 1;
  while (lo * 4 <= v) lo *= 4;
  return lo == v ? std::pair{v, v} : std::pair{lo, lo * 4};
}

namespace {

Shape normalized(Shape s) {
  if (s.decode == 0) s.context = 0;
  if (s.prefill == 0) s.prefill_context = 0;
  return s;
}

// "time dynamic_j static_w" of a finished simulation: the chips the work ran on (and the
// fabric's dynamic energy).
std::string cost_line(const run::RunData& out) {
  std::vector<int> used = out.rank_to_chip;
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  double dyn = out.fabric_energy.dynamic.si, stat = 0;
  for (int c : used) {
    if (std::size_t(c) < out.chip_energy.size()) {
      dyn += out.chip_energy[std::size_t(c)].dynamic.si;
      stat += out.chip_energy[std::size_t(c)].static_.si;
    }
  }
  const double t = out.end.to_seconds();
  return fmt::format("{:.17g} {:.17g} {:.17g}", t, dyn, t > 0 ? stat / t : 0.0);
}

}  // namespace

config::Json shape_inputs(const config::LoadedConfig& cfg, const infer::IterationSpec& base) {
  config::Json k = config::Json::object();
  k["config"] = config::to_json(cfg.config);
  k["model"] = config::JsonWriter::to_json(base.model);
  k["layout"] = base.layout.text();
  k["weights_dtype"] = std::string(to_string(base.dtypes.weights));
  k["kv_dtype"] = std::string(to_string(base.dtypes.kv));
  k["sample_top_k"] = base.sample_top_k;
  k["seed"] = base.seed;
  k["runtime"] = fmt::format("{:.17g} {:.17g} {:.17g}", base.runtime.launch_s, base.runtime.sync_s,
                             base.runtime.schedule_s);
  k["batch_buckets"] = base.batch_buckets;
  k["seq_buckets"] = base.seq_buckets;
  k["disaggregated"] = base.disaggregated;
  return k;
}

RackTimer::RackTimer(const config::LoadedConfig& cfg, const infer::IterationSpec& base,
                     TimingMode mode, int parallel, int per_octave,
                     const run::CacheSettings& cache, const resolve::RackPlan* rack)
    : cfg_(cfg),
      rack_(rack ? *rack : std::move(*resolve::plan(cfg, resolve::Purpose::run).rack)),
      base_(base), mode_(mode), parallel_(std::max(1, parallel)), per_octave_(per_octave) {
  tile_ = std::max<std::uint64_t>(1, std::uint64_t(rack_.chip.params.core.tensor.rows));
  store_ = cache;
  if (!cache.enabled) return;
  // Any change of code is a new file.
  config::Json k = shape_inputs(cfg, base);
  k["format"] = "serve iteration costs 1";
  k["build"] = run::build_identity();
  const run::CacheKey key = run::cache_key(k);
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(cache.dir) / "serve-shapes";
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path key_file = dir / (key.hex + ".key");
  std::ifstream in(key_file);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str() != key.canonical) {
      logger("serve")->warn("shape cache: {} holds another key (a hash collision or a foreign "
                            "file); shapes are not cached", key_file.string());
      return;
    }
  } else {
    // Through a temporary file and a rename: concurrent writers leave one whole file.
    const fs::path tmp = dir / fmt::format("{}.key.{}", key.hex, ::getpid());
    std::ofstream out(tmp);
    out << key.canonical;
    out.close();
    if (!out || (fs::rename(tmp, key_file, ec), ec)) {
      fs::remove(tmp, ec);
      logger("serve")->warn("shape cache: cannot write {}; shapes are not cached",
                            key_file.string());
      return;
    }
  }
  disk_file_ = (dir / (key.hex + ".costs")).string();
  claims_.set_prefix((dir / key.hex).string());
}

void RackTimer::load_disk() {
  if (disk_file_.empty()) return;
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(disk_file_, ec);
  if (ec || size <= disk_read_) return;
  std::ifstream in(disk_file_, std::ios::binary);
  in.seekg(std::streamoff(disk_read_));
  std::string text(size - disk_read_, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(std::size_t(in.gcount()));
  // Whole lines only (another process may be appending one): "decode context prefill
  // prefill_context time dynamic_j static_w".
  const std::size_t end = text.rfind('\n');
  if (end == std::string::npos) return;
  std::istringstream lines(text.substr(0, end + 1));
  std::string line;
  while (std::getline(lines, line)) {
    double t = 0, dyn = 0, sw = 0;
    unsigned long long d = 0, c = 0, p = 0, pc = 0;
    int at = 0;
    if (std::sscanf(line.c_str(), "%llu %llu %llu %llu %n%lf %lf %lf", &d, &c, &p, &pc, &at, &t,
                    &dyn, &sw) != 7) {
      continue;  // not a line this format wrote: ignored (the shape is simulated)
    }
    disk_[Shape{d, c, p, pc}] = line.substr(std::size_t(at));
  }
  disk_read_ += end + 1;
}

bool RackTimer::known(const Shape& s) const {
  return cache_.count(s) || disk_.count(s) || ahead_.count(s) || in_flight_.count(s);
}

RackTimer::Begun RackTimer::start(const Shape& sh, bool wanted, bool unclaimed) {
  // Claimed first, so that a concurrent run of the same key waits for this one's line instead of
  // simulating the shape too; then the disk cache read again (a holder may have finished it
  // since it was last read).
  const ShapeClaims::Claim c = unclaimed ? ShapeClaims::Claim::self : claims_.claim(sh);
  if (c == ShapeClaims::Claim::other) return Begun::busy;
  load_disk();
  if (const auto it = disk_.find(sh); it != disk_.end()) {
    claims_.release(sh);
    if (wanted) {
      ahead_[sh] = it->second;
      ++from_disk_;
    }
    return Begun::on_disk;
  }
  const std::uint64_t id = pool_.start([this, sh]() -> std::string {
    infer::IterationSpec spec = base_;
    spec.decode_seqs = sh.decode;
    spec.context = sh.context;
    spec.prefill_tokens = sh.prefill;
    spec.prefill_context = sh.prefill_context;
    infer::IterationSource source(spec);
    infer::IterationDriver driver(source);
    run::Simulation sim(cfg_, driver);
    sim.set_rack_plan(rack_);
    sim.set_samples(false);  // the cost is the end's figures
    // The shapes' op calibrations share one op profile store: a shape simulates only the ops no
    // shape before it (or beside it) has calibrated; a profile is the same whoever calibrated it.
    sim.set_cache(store_);
    // Shapes already run timing.parallel at once: a shape's missing ops go to one child.
    sim.set_calibration_jobs(1);
    return cost_line(sim.run());
  }, /*background=*/!wanted);
  children_[id] = {sh, wanted};
  in_flight_[sh] = id;
  return Begun::started;
}

void RackTimer::collect(bool block) {
  for (ForkPool::Done& d : pool_.collect(block)) {
    const auto [sh, wanted] = children_.at(d.id);
    children_.erase(d.id);
    in_flight_.erase(sh);
    if (d.kind != 'o') {
      claims_.release(sh);  // not simulated: a waiting run simulates it itself
      if (!wanted) continue;  // simulated ahead and failed: simulated again if the run needs it
      d.rethrow();
    }
    if (!disk_file_.empty()) {
      // One append of a whole line (O_APPEND: concurrent runs' lines do not interleave); a
      // failure leaves the run uncached, not wrong.
      const std::string line = fmt::format("{} {} {} {} {}\n", sh.decode, sh.context, sh.prefill,
                                           sh.prefill_context, d.text);
      const int fd = ::open(disk_file_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0 || ::write(fd, line.data(), line.size()) != ssize_t(line.size())) {
        logger("serve")->warn("shape cache: cannot append to {}; shapes are not cached",
                              disk_file_);
        disk_file_.clear();
      }
      if (fd >= 0) ::close(fd);
    }
    claims_.release(sh);  // after its line: a run waiting for it reads it
    ahead_[sh] = std::move(d.text);
  }
}

std::vector<std::string> RackTimer::cost_lines(const std::vector<Shape>& shapes) {
  load_disk();
  std::vector<std::string> out(shapes.size());
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    // (A shape simulated ahead is in the disk cache too, once its line is read back: it counts as
    // simulated in this run.)
    const bool ours = ahead_.count(shapes[i]) || in_flight_.count(shapes[i]);
    if (const auto it = disk_.find(shapes[i]); !ours && it != disk_.end()) {
      out[i] = it->second;
      ++from_disk_;
      continue;
    }
    todo.push_back(i);
  }
  missed_ = missed_ || !todo.empty();
  // The shapes already simulated ahead, or in flight, are taken as they are; the others started,
  // `parallel` of the run's at once (beside children simulating ahead that are still running).
  std::vector<Shape> queue;
  for (std::size_t i : todo) {
    const Shape& s = shapes[i];
    if (ahead_.count(s)) continue;
    if (const auto f = in_flight_.find(s); f != in_flight_.end()) {
      children_.at(f->second).second = true;
      pool_.foreground(f->second);
    } else if (std::find(queue.begin(), queue.end(), s) == queue.end()) {
      queue.push_back(s);
    }
  }
  if (!todo.empty()) {
    logger("serve")->debug("{} shapes needed: {} simulated ahead or in flight, {} started",
                           todo.size(), todo.size() - queue.size(), queue.size());
  }
  std::size_t next = 0;
  // Shapes another process has claimed: waited for (their line in the disk cache), polled between
  // this run's own children; simulated here if the claim ends without a line, or after kMaxWait
  // (a holder that hangs: never a hang here).
  constexpr double kMaxWait = 600;
  std::vector<std::pair<Shape, std::chrono::steady_clock::time_point>> busy;
  for (;;) {
    const bool done = std::all_of(todo.begin(), todo.end(),
                                  [&](std::size_t i) { return ahead_.count(shapes[i]) > 0; });
    if (done) break;
    std::size_t wanted = 0;
    for (const auto& [id, c] : children_) wanted += c.second ? 1 : 0;
    for (auto b = busy.begin(); b != busy.end() && wanted < std::size_t(parallel_);) {
      const bool waited_out = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                            b->second).count() > kMaxWait;
      if (waited_out) {
        logger("serve")->warn("shape cache: waited {:.0f} s for another process's simulation of a "
                              "shape ({}); simulating it here", kMaxWait, claims_.lock_path(b->first));
      }
      const Begun r = start(b->first, true, waited_out);
      if (r == Begun::busy) {
        ++b;
        continue;
      }
      wanted += r == Begun::started ? 1 : 0;
      b = busy.erase(b);
    }
    while (next < queue.size() && wanted < std::size_t(parallel_)) {
      const Shape& s = queue[next++];
      const Begun r = start(s, true);
      if (r == Begun::busy) {
        logger("serve")->debug("shape cache: waiting for {} ({}) to simulate a shape",
                               claims_.holder(s), claims_.lock_path(s));
        busy.emplace_back(s, std::chrono::steady_clock::now());
      }
      wanted += r == Begun::started ? 1 : 0;
    }
    // Another process's claims are polled: the children collected without blocking, then a pause.
    collect(busy.empty());
    if (!busy.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i : todo) {
    const Shape& s = shapes[i];
    if (const auto it = ahead_.find(s); it != ahead_.end()) {
      if (std::find(queue.begin(), queue.end(), s) == queue.end()) ++ahead_used_;
      out[i] = std::move(it->second);
      ahead_.erase(it);
    } else {
      out[i] = out[std::size_t(std::find(shapes.begin(), shapes.end(), s) - shapes.begin())];
    }
  }
  return out;
}

void RackTimer::look_ahead(const Shape& shape) {
  // Only once the run has needed a shape the disk cache did not hold: a rerun that finds all of
  // its shapes there (a warm run) starts no child, where it used to start `parallel` children
  // for shapes the cold run had killed unfinished and kill them again at its end.
  if (parallel_ < 2 || !missed_) return;
  if (!children_.empty()) collect(false);
  if (children_.size() >= std::size_t(parallel_)) return;
  // The candidates around the shape's cell (recomputed when the cell changes): the iterations
  // just past its cell in each dimension, the likeliest first (running sequences' contexts grow;
  // batches grow and shrink), and the grid shapes they would be timed from.
  const std::uint64_t dp = std::uint64_t(std::max(1, base_.layout.dp));
  const auto dc = grid_cell(shape.decode, per_octave_);
  const auto cc = context_cell(shape.context, tile_, 1);
  const std::uint64_t rows = shape.prefill == 0 ? 0
                             : shape.decode == 0 ? shape.prefill
                                                 : (shape.decode + dp - 1) / dp + shape.prefill;
  const auto rc = context_cell(rows, tile_, per_octave_);
  const std::array<std::uint64_t, 6> cell{dc.first, dc.second, cc.first, cc.second, rc.first,
                                          rc.second};
  if (cell != ahead_cell_) {
    ahead_cell_ = cell;
    ahead_queue_.clear();
    std::vector<Shape> next;
    if (shape.decode > 0) {
      next.push_back({shape.decode, cc.second + 1, shape.prefill, shape.prefill_context});
      next.push_back({dc.second + 1, shape.context, shape.prefill, shape.prefill_context});
      if (dc.first > 1) next.push_back({dc.first - 1, shape.context, shape.prefill, shape.prefill_context});
    }
    if (shape.prefill > 0) {
      const std::uint64_t g0 = rows - shape.prefill;
      next.push_back({shape.decode, shape.context, rc.second + 1 - g0, shape.prefill_context});
      if (rc.first > g0 + 1) {
        next.push_back({shape.decode, shape.context, rc.first - 1 - g0, shape.prefill_context});
      }
    }
    for (const Shape& n : next) {
      for (const auto& [s, w] : grid_terms(n, tile_, per_octave_, dp)) {
        if (std::find(ahead_queue_.begin(), ahead_queue_.end(), s) == ahead_queue_.end()) {
          ahead_queue_.push_back(s);
        }
      }
    }
    std::reverse(ahead_queue_.begin(), ahead_queue_.end());  // taken from the back
  }
  if (!ahead_queue_.empty()) load_disk();
  while (children_.size() < std::size_t(parallel_) && !ahead_queue_.empty()) {
    const Shape s = ahead_queue_.back();
    ahead_queue_.pop_back();
    if (!known(s)) start(s, false);  // claimed elsewhere or on disk by now: not started
  }
}

void RackTimer::simulate(const std::vector<Shape>& shapes) {
  if (shapes.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<std::string> results = cost_lines(shapes);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    IterationCost c;
    double sw = 0;
    if (std::sscanf(results[i].c_str(), "%lf %lf %lf", &c.time_s, &c.dynamic_j, &sw) != 3) {
      throw InternalError("serving: an iteration's child process returned no cost");
    }
    cache_[shapes[i]] = c;
    static_w_[shapes[i]] = sw;
  }
  simulated_ += shapes.size();
  wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

IterationCost RackTimer::cost(const Shape& raw) {
  ++lookups_;
  const Shape shape = normalized(raw);
  if (mode_ == TimingMode::exact) {
    if (!cache_.count(shape)) simulate({shape});
    return cache_.at(shape);
  }
  if (remember_ && !cache_.count(shape)) interpolated_.insert(shape);
  const IterationCost c = interpolate(shape);
  look_ahead(shape);
  return c;
}

std::vector<RackTimer::HeldBack> RackTimer::held_back(std::size_t k) {
  std::vector<HeldBack> out;
  // Shapes that became grid points later (a corner of another cell) are not interpolated.
  std::vector<Shape> off;
  for (const Shape& s : interpolated_) {
    if (!cache_.count(s)) off.push_back(s);
  }
  if (off.empty() || k == 0) return out;
  std::vector<Shape> picked;
  const std::size_t n = off.size();
  for (std::size_t j = 0; j < std::min(k, n); ++j) {
    const Shape& s = off[(2 * j + 1) * n / (2 * std::min(k, n))];
    if (picked.empty() || picked.back() != s) picked.push_back(s);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t from_disk = from_disk_;  // shapes_from_disk() counts the run's shapes only
  const std::vector<std::string> exact = cost_lines(picked);
  from_disk_ = from_disk;
  wall_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (std::size_t i = 0; i < picked.size(); ++i) {
    HeldBack h;
    h.shape = picked[i];
    h.interpolated_s = interpolate(picked[i]).time_s;
    if (std::sscanf(exact[i].c_str(), "%lf", &h.exact_s) != 1) {
      throw InternalError("serving: a held-back shape's child process returned no cost");
    }
    out.push_back(h);
  }
  return out;
}

namespace {

// A cell's ends and their linear weights at `v` (one point on a point; none of weight 0).
std::vector<std::pair<std::uint64_t, double>> cell_weights(
    std::pair<std::uint64_t, std::uint64_t> cell, std::uint64_t v) {
  const auto [lo, hi] = cell;
  if (lo == hi) return {{lo, 1.0}};
  const double f = double(v - lo) / double(hi - lo);
  std::vector<std::pair<std::uint64_t, double>> out;
  if (f < 1) out.emplace_back(lo, 1 - f);
  if (f > 0) out.emplace_back(hi, f);
  return out;
}

}  // namespace

std::vector<std::pair<Shape, double>> grid_terms(const Shape& shape, std::uint64_t tile,
                                                 int per_octave, std::uint64_t dp) {
  // Multilinear over `cells` (one per dimension: decode, context, prefill, prefill context),
  // each corner's weight the product of its dimensions' weights, times `sign`.
  using Cells = std::array<std::pair<std::uint64_t, std::uint64_t>, 4>;
  std::vector<std::pair<Shape, double>> terms;
  const auto add = [&terms](const std::array<std::uint64_t, 4>& v, const Cells& cells, double sign) {
    for (unsigned m = 0; m < 16; ++m) {
      std::array<std::uint64_t, 4> c{};
      double w = sign;
      bool skip = false;
      for (std::size_t d = 0; d < 4; ++d) {
        const auto [lo, hi] = cells[d];
        const bool up = (m >> d) & 1;
        if (lo == hi) {
          if (up) skip = true;
          c[d] = lo;
          continue;
        }
        const double f = double(v[d] - lo) / double(hi - lo);
        c[d] = up ? hi : lo;
        w *= up ? f : 1 - f;
      }
      if (!skip && w != 0) terms.emplace_back(normalized(Shape{c[0], c[1], c[2], c[3]}), w);
    }
  };
  const std::array<std::uint64_t, 4> v{shape.decode, shape.context, shape.prefill,
                                       shape.prefill_context};
  const auto pt = [](std::uint64_t x) { return std::pair{x, x}; };
  // The decode's context and the chunk's cached context on coarse grids: an iteration's time is
  // close to linear in either (the KV bytes read, the chunk's keys), up to the steps between key
  // tiles, which fall on the context's cell ends (context_cell); the batch on grid_cell's finer
  // grid (the decode time is concave in it), the chunk in whole row tiles at grid_cell's tile
  // counts (its time is convex in its tokens, its attention quadratic, and steps up where its
  // rows pass a tile).
  Cells decode_cells{grid_cell(v[0], per_octave), context_cell(v[1], tile, 1), pt(0), pt(0)};
  if (shape.decode == 0 || shape.prefill == 0) {
    // A pure decode (the decode grid's batch and context) or a pure prefill (the chunk's grid
    // of tokens and cached context): 2-D cells, up to 4 corners.
    decode_cells[2] = context_cell(v[2], tile, per_octave);
    decode_cells[3] = coarse_cell(v[3]);
    add(v, decode_cells, 1);
    return terms;
  }
  // A mixed iteration: its decodes as a pure decode of the same batch and context; plus what a
  // chunk with no cached context adds to a decode of that batch, on the mixed grid (batch on
  // coarse_cell, group 0's rows below) at the anchor context of one key tile: the mixed shape less
  // the pure decode of the same batch there; plus what the chunk's cached context adds, on the
  // pure prefill grid: the prefill after its context less the prefill after none. The decodes'
  // context and the chunk's are separate terms because their attention ops are separate ops
  // (the decodes' over their KV, the chunk's over the prompt before it); the chunk's increment
  // falls with the batch beside it (they share the experts' weight reads), slowly, hence the
  // coarse batch grid (measured in docs/serving.md#method).
  add(v, decode_cells, 1);
  // The chunk's increment on group 0's rows (its decodes and the chunk: the GEMMs run rows in
  // tiles of `tile`, and the time steps up where they pass one), in whole tiles as the context:
  // each anchor batch's chunk is the rows less its own group-0 decodes, so its steps fall where
  // the shape's do (at least one token).
  const auto group0 = [dp](std::uint64_t d) { return (d + dp - 1) / dp; };
  const std::uint64_t rows = group0(v[0]) + v[2];
  const auto row_cell = context_cell(rows, tile, per_octave);
  for (const auto& [b, fb] : cell_weights(coarse_cell(v[0]), v[0])) {
    for (const auto& [r, fr] : cell_weights(row_cell, rows)) {
      terms.emplace_back(Shape{b, tile, r > group0(b) ? r - group0(b) : 1, 0}, fb * fr);
    }
    terms.emplace_back(Shape{b, tile, 0, 0}, -fb);
  }
  if (v[3] > 0) {
    const auto chunk = context_cell(v[2], tile, per_octave);
    add(v, Cells{pt(0), pt(0), chunk, coarse_cell(v[3])}, 1);
    add(v, Cells{pt(0), pt(0), chunk, pt(0)}, -1);
  }
  return terms;
}

IterationCost RackTimer::interpolate(const Shape& shape) {
  const std::vector<std::pair<Shape, double>> terms =
      grid_terms(shape, tile_, per_octave_, std::uint64_t(std::max(1, base_.layout.dp)));
  std::vector<Shape> missing;
  for (const auto& [s, w] : terms) {
    if (!cache_.count(s) && std::find(missing.begin(), missing.end(), s) == missing.end()) {
      missing.push_back(s);
    }
  }
  simulate(missing);
  IterationCost out;
  for (const auto& [s, w] : terms) {
    const IterationCost& c = cache_.at(s);
    out.time_s += w * c.time_s;
    out.dynamic_j += w * c.dynamic_j;
  }
  return out;
}

double RackTimer::static_w() const {
  // The chips' static power does not depend on the shape: the first simulated one's.
  return static_w_.empty() ? 0 : static_w_.begin()->second;
}

}  // namespace trnsim::serve
