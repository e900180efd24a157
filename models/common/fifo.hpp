// SPDX-License-Identifier: MIT
// A FIFO that costs 32 bytes and no allocation while empty. std::deque allocates a 512-byte
// block even when empty; a rack holds tens of thousands of queues (18,432 DMA engines x 16
// queues, router inputs x VCs x outputs), so that alone was a third of a run's memory and most
// of its cache misses.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace trnsim::model {

template <class T>
class Fifo {
 public:
  bool empty() const { return head_ == q_.size(); }
  std::size_t size() const { return q_.size() - head_; }
  T& front() { return q_[head_]; }
  const T& front() const { return q_[head_]; }
  void push(T v) { q_.push_back(std::move(v)); }
  T pop() {
    T v = std::move(q_[head_++]);
    if (head_ == q_.size()) {
      q_.clear();
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= q_.size()) {  // amortised compaction
      q_.erase(q_.begin(), q_.begin() + std::ptrdiff_t(head_));
      head_ = 0;
    }
    return v;
  }

 private:
  std::vector<T> q_;
  std::size_t head_ = 0;
};

}  // namespace trnsim::model
