// SPDX-License-Identifier: MIT
#include "trnsim/serve/timeline.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace trnsim::serve {

namespace {

using TimelineJson = nlohmann::json;

constexpr int kReplicasPid = 1, kRequestsPid = 2;

TimelineJson timeline_thread_name(int pid, std::uint64_t tid, const std::string& name) {
  return {{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

TimelineJson timeline_span(const char* name, int pid, std::uint64_t tid, double from_s, double to_s, TimelineJson args) {
  return {{"name", name}, {"ph", "X"}, {"pid", pid}, {"tid", tid}, {"ts", from_s * 1e6},
          {"dur", std::max(0.0, to_s - from_s) * 1e6}, {"args", std::move(args)}};
}

}  // namespace

std::string timeline_json(const EngineResult& r, const ServeTimelineOptions& o) {
  TimelineJson ev = TimelineJson::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", kReplicasPid}, {"args", {{"name", "replicas"}}}});
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", kRequestsPid}, {"args", {{"name", "requests"}}}});
  int replicas = 0;
  for (const auto& it : r.iterations) replicas = std::max(replicas, it.replica + 1);
  for (int k = 0; k < replicas; ++k) ev.push_back(timeline_thread_name(kReplicasPid, std::uint64_t(k), "replica " + std::to_string(k)));
  const std::size_t iterations = std::min(r.iterations.size(), o.max_iterations);
  for (std::size_t i = 0; i < iterations; ++i) {
    const auto& it = r.iterations[i];
    const char* name = it.shape.prefill == 0 ? "decode" : it.shape.decode == 0 ? "prefill" : "decode+prefill";
    ev.push_back(timeline_span(name, kReplicasPid, std::uint64_t(it.replica), it.start_s, it.end_s,
                      {{"decode", it.shape.decode},
                       {"context", it.shape.context},
                       {"prefill", it.shape.prefill},
                       {"prefill_context", it.shape.prefill_context},
                       {"batch", it.batch},
                       {"kv_blocks", it.kv_blocks},
                       {"waiting", it.waiting},
                       {"tokens_out", it.tokens_out}}));
  }
  std::size_t drawn = 0;
  for (const auto& q : r.requests) {
    if (drawn == o.max_requests) break;
    if (q.refused || q.first_scheduled_s < 0 || q.finish_s < 0) continue;
    ++drawn;
    const std::uint64_t tid = q.req.id;
    ev.push_back(timeline_thread_name(kRequestsPid, tid, "request " + std::to_string(q.req.id)));
    const TimelineJson args{{"id", q.req.id},
                    {"replica", q.replica},
                    {"input_tokens", q.req.input_tokens},
                    {"output_tokens", q.req.output_tokens},
                    {"preemptions", q.preemptions},
                    {"warmup", q.warmup}};
    ev.push_back(timeline_span("queue", kRequestsPid, tid, q.req.arrival_s, q.first_scheduled_s, args));
    ev.push_back(timeline_span("prefill", kRequestsPid, tid, q.first_scheduled_s, q.first_token_s, args));
    ev.push_back(timeline_span("decode", kRequestsPid, tid, q.first_token_s, q.finish_s, args));
  }
  std::size_t served = 0;
  for (const auto& q : r.requests) served += !q.refused && q.finish_s >= 0;
  const TimelineJson doc{{"traceEvents", std::move(ev)},
                 {"displayTimeUnit", "ms"},
                 {"otherData",
                  {{"iterations_drawn", iterations},
                   {"iterations_recorded", r.iterations.size()},
                   {"iterations_total", r.iterations_total},
                   {"requests_drawn", drawn},
                   {"requests_served", served}}}};
  return doc.dump() + "\n";
}

}  // namespace trnsim::serve
