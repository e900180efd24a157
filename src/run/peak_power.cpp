// SPDX-License-Identifier: MIT
#include "trnsim/run/peak_power.hpp"

#include <algorithm>

#include "trnsim/error.hpp"

namespace trnsim::run {

PeakWindow::PeakWindow(double window_s) : window_(window_s) {
  if (!(window_s > 0)) throw InternalError("PeakWindow: the window must be longer than 0");
}

double PeakWindow::at(const Point& a, const Point& b, double t) {
  if (b.t <= a.t) return b.e;
  return a.e + (b.e - a.e) * ((t - a.t) / (b.t - a.t));
}

void PeakWindow::add(double t_s, double joules) {
  const Point p{t_s, joules};
  if (!started_) {
    started_ = true;
    first_ = last_ = p;
    recent_.push_back(p);
    return;
  }
  if (t_s < last_.t) throw InternalError("PeakWindow::add: a sample earlier than the last");
  const Point prev = last_;
  last_ = p;
  // Windows that start at a sample and end between the previous sample and this one.
  for (const Point& s : recent_) {
    const double end = s.t + window_;
    if (end > t_s) break;  // later samples end later still
    if (end <= prev.t) continue;  // ended before: counted then
    best_ = std::max(best_, at(prev, p, end) - s.e);
    full_ = true;
  }
  recent_.push_back(p);
  // The window that ends at this sample, if the samples reach back that far.
  const double start = t_s - window_;
  if (start < first_.t) return;
  while (recent_.size() >= 2 && recent_[1].t <= start) recent_.pop_front();
  best_ = std::max(best_, joules - at(recent_[0], recent_[1], start));
  full_ = true;
}

double PeakWindow::span_s() const { return last_.t - first_.t; }

double PeakWindow::length_s() const { return std::min(window_, span_s()); }

double PeakWindow::peak_joules() const { return full_ ? best_ : last_.e - first_.e; }

double PeakWindow::peak_watts() const {
  const double l = length_s();
  return l > 0 ? peak_joules() / l : 0.0;
}

}  // namespace trnsim::run
