// SPDX-License-Identifier: MIT
// The largest energy spent in any window of a fixed length (report.json's peak_power_w over
// /sim/peak_power_window), from a cumulative energy sampled at increasing times.
//
// The run's sample series (RunData::samples) keeps at most 513 samples, so its spacing grows
// with the run and with how often ops and transfers end, which differs by fidelity tier: a peak
// over one of its intervals measured a different span at each tier (docs/models/fidelity.md).
// This tracker keeps only the samples of the last window, so its spacing need not grow: the
// window is fixed, and the samples only resolve it.
#pragma once

#include <cstddef>
#include <deque>

namespace trnsim::run {

class PeakWindow {
 public:
  // `window_s` > 0.
  explicit PeakWindow(double window_s);

  double window_s() const { return window_; }

  // The cumulative energy `joules` at `t_s`; times do not decrease. Between two samples the
  // energy is taken to grow linearly (a constant power).
  void add(double t_s, double joules);

  // The samples' span: the last time less the first (0 before two samples).
  double span_s() const;
  // The length the peak is over: the window, or the span when the samples span less.
  double length_s() const;
  // The most energy spent over any interval of length_s() inside the span: over the window's
  // positions whose start or end is a sample's time (where the largest is, with linear energy
  // in between). 0 before two samples.
  double peak_joules() const;
  // peak_joules() / length_s(); 0 when length_s() is 0.
  double peak_watts() const;

 private:
  struct Point {
    double t, e;
  };
  // The energy at `t` between `a` and `b` (a.t <= t <= b.t).
  static double at(const Point& a, const Point& b, double t);

  double window_;
  bool started_ = false;
  Point first_{0, 0}, last_{0, 0};
  // The samples whose time plus the window is past the last sample (windows starting there
  // not yet ended), and the last sample at or before the last time less the window (to
  // interpolate the start of the window ending at a new sample).
  std::deque<Point> recent_;
  double best_ = 0;
  bool full_ = false;  // the span has reached one window
};

}  // namespace trnsim::run
