#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Replays every third-party trace in ../shared/traces/ with `trnsim run` and prints one Markdown
# table row per trace: exit code, simulated step time, reader warnings, wall time, peak memory.
# Why: issue #5 requires that every shared trace replays (the real PyTorch trace with warnings,
# not errors); this is the check, and docs/results/shared-traces.md records its output.
#
# Usage: tools/replay-shared-traces.sh [TRNSIM]
#   TRNSIM       the CLI binary (default build/release/src/cli/trnsim)
#   TRACES=dir   the trace folder (default ../shared/traces relative to the project root)
#   TIMEOUT=s    per-trace wall-time limit in seconds (default 600; exit code 124 = timed out)
#   ONLY=regex   replay only the traces whose label matches
#   SLOW=1       also replay the generated MoE trace, which at commit 9048d3e did not finish in
#                24 min and grew to 19 GB of memory (docs/results/shared-traces.md); without it
#                its rows say "skipped" and the script takes well under a minute
# Runs one trace at a time, under `nice -n 10`. Exits 1 when a trace did not replay.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
trnsim=${1:-$root/build/release/src/cli/trnsim}
traces=${TRACES:-$root/../shared/traces}
timeout_s=${TIMEOUT:-600}
only=${ONLY:-.}
slow=${SLOW:-0}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
command -v jq >/dev/null || { echo "replay-shared-traces: jq is required" >&2; exit 2; }
[ -x "$trnsim" ] || { echo "replay-shared-traces: no trnsim binary at $trnsim" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# label | trace (prefix or file, relative to $traces) | extra options
list=()
for op in all_reduce all_gather reduce_scatter all_to_all; do
  for n in 4 8 16; do
    list+=("astra-sim $op ${n}npus|astra-sim/microbenchmarks/$op/${n}npus_1MB/$op|")
  done
done
list+=("astra-sim custom ring all-reduce|astra-sim/custom_ring_allreduce/custom_allreduce|")
list+=("chakra PyTorch trace|chakra/chakra|")
list+=("chakra JSON form|chakra/small_chakra.0.json|")
list+=("SLOW MoE mixtral dp2 tp2 ep4|moe-generated/mixtral_like_dp2_tp2_ep4/workload|--chakra-size-unit elements --chakra-num-ops macs")
list+=("SLOW MoE mixtral dp2 tp2 ep4 (trn2 instance)|moe-generated/mixtral_like_dp2_tp2_ep4/workload|--chakra-size-unit elements --chakra-num-ops macs --config $root/configs/racks/trn2-instance.json")

failed=0
echo "| trace | ranks | rack | exit | step time | reader warnings | stderr lines | wall s | peak RSS MiB | first error line |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---|"
for entry in "${list[@]}"; do
  IFS='|' read -r label trace opts <<<"$entry"
  [[ $label =~ $only ]] || continue
  if [[ $label == SLOW\ * ]]; then
    label=${label#SLOW }
    if [ "$slow" != 1 ]; then
      echo "| $label | | | | | | | | | skipped (set SLOW=1) |"
      continue
    fi
  fi
  # shellcheck disable=SC2086  # opts is a list of words
  /usr/bin/time -f '%e %M' -o "$tmp/time" timeout "$timeout_s" nice -n 10 \
    "$trnsim" run --trace "$traces/$trace" $opts --json >"$tmp/out" 2>"$tmp/err"
  rc=$?
  # GNU time puts "Command exited with non-zero status N" before its line when rc != 0.
  read -r wall rss_kb < <(tail -n 1 "$tmp/time") || { wall='?'; rss_kb=0; }
  [ "$rc" = 124 ] && wall=">$timeout_s"
  # The CLI always prints one "wall time ..." line on stderr; anything else is a warning or error.
  errs=$(grep -v '^wall time ' "$tmp/err" | grep -c . || true)
  first=$(grep -v '^wall time ' "$tmp/err" | head -1 | cut -c1-160 |
    sed 's/|/\\|/g')
  # report.json's fields (docs/report.md): /workload/ranks, /machine/rack and /chips,
  # /performance/step_time_ns, /notes.
  if [ "$rc" = 0 ] && jq -e . "$tmp/out" >/dev/null 2>&1; then
    ranks=$(jq -r '.workload.ranks' "$tmp/out")
    rack=$(jq -r '"\(.machine.rack) (\(.machine.chips))"' "$tmp/out")
    step=$(jq -r '.performance.step_time_ns / 1e3 | . * 1000 | round / 1000 | "\(.) µs"' "$tmp/out")
    notes=$(jq -r '.notes | length' "$tmp/out")
  else
    ranks=-; rack=-; step=-; notes=-
    failed=$((failed + 1))
  fi
  echo "| $label | $ranks | $rack | $rc | $step | $notes | $errs | $wall | $((rss_kb / 1024)) | $first |"
done
# A trace that did not replay (or whose report could not be read) fails the script.
if [ "$failed" -gt 0 ]; then
  echo "replay-shared-traces: $failed trace(s) did not replay" >&2
  exit 1
fi
